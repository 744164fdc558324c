"""Every error a client sees keeps its code, status and body on every surface: the
HTTP problem (status, headers, the whole body), the code and text MCP answers with,
and A2A's error. Written before the error tree was reshaped (issue 22), so it pins the
answers as they were; the raisers are the errors as the code raises them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import redis
from fastapi import FastAPI
from starlette.exceptions import HTTPException
from starlette.testclient import TestClient

from api import auth, problems, stream_tokens
from api.a2a.errors import edge
from api.errors import (
    AnswerInvalid,
    ForbiddenRole,
    InvalidKey,
    RequestInvalid,
    WebhookNotConfigured,
)
from api.http import attachments as http_attachments
from api.http import limits
from api.service import attachments, pages, projects
from runtime.errors import BudgetExceeded, DefinitionError, UnknownAgent
from runtime.tokens import TokenTable
from store.errors import (
    CursorAhead,
    IdempotencyConflict,
    InputExpired,
    InputForbidden,
    InputNotOpen,
    NotFound,
    OutcomeAlreadyRecorded,
    QuotaExceeded,
    ResyncRequired,
    SessionAgentConflict,
    SessionBusy,
    StoreError,
    TurnIdTaken,
    TurnNotActive,
    Unavailable,
)

P = "urn:turnkeep:problem:"
INTERNAL = {
    "type": P + "internal",
    "title": "Internal server error",
    "status": 500,
    "code": "internal",
    "detail": "internal error",
}


def body(code: str, title: str, status: int, detail: str, **extra: Any) -> dict[str, Any]:
    head = {"type": P + code, "title": title, "status": status, "code": code, "detail": detail}
    return head | extra


def caught(fn: Callable[..., object], *args: object) -> BaseException:
    """What ``fn(*args)`` raises."""
    try:
        fn(*args)
    except Exception as exc:
        return exc
    raise AssertionError(f"{fn.__name__} raised nothing")


Raiser = Callable[[], BaseException]

# fmt: off
#: (name, raiser, HTTP status, the headers it adds, the problem body)
HTTP: list[tuple[str, Raiser, int, dict[str, str], dict[str, Any]]] = [
    ("not_found", lambda: NotFound("session not found"), 404, {},
     body("not_found", "Not found", 404, "session not found")),
    ("idempotency_conflict", lambda: IdempotencyConflict("t1 has another hash"), 409, {},
     body("idempotency_conflict", "Idempotency key reused with another request", 409,
          "this Idempotency-Key was already used with another request")),
    ("session_agent_conflict", lambda: SessionAgentConflict("s1 is bound to a"), 409, {},
     body("session_agent_conflict", "Session is bound to another agent", 409,
          "the session is bound to another agent")),
    ("session_busy", lambda: SessionBusy("session s1 has an active turn"), 409, {},
     body("session_busy", "Session has an active turn", 409,
          "the session has an active turn (multitask=reject)")),
    ("input_not_open", lambda: InputNotOpen("the input request is not open"), 409, {},
     body("input_not_open", "Input request is not open", 409, "the input request is not open")),
    ("input_expired", lambda: InputExpired("expired at x"), 410, {},
     body("input_expired", "input_expired", 410, "the input request expired unanswered")),
    ("input_forbidden", lambda: InputForbidden("alice may not"), 403, {},
     body("input_forbidden", "input_forbidden", 403,
          "this principal may not answer the request")),
    ("turn_not_active", lambda: TurnNotActive("turn t1 is completed"), 409, {},
     body("turn_not_active", "Turn is not active", 409, "the turn has already ended")),
    ("quota_exceeded", lambda: QuotaExceeded("session", 3), 429, {"retry-after": "5"},
     body("quota_exceeded", "Quota exceeded", 429, "the session quota of 3 is reached",
          quota="session", limit=3)),
    ("cursor_ahead", lambda: CursorAhead(7, 3), 409, {},
     body("cursor_ahead", "Cursor is beyond the session's head", 409,
          "cursor 7 is beyond the head seq", cursor=7, head_seq=3)),
    ("resync_required", lambda: ResyncRequired(2, 5, 9), 410, {},
     body("resync_required", "Cursor is before the earliest retained event", 410,
          "cursor 2 is before the earliest retained seq 5", requested=2, earliest=5, latest=9)),
    ("store_unavailable", lambda: Unavailable("refused"), 503, {"retry-after": "1"},
     body("unavailable", "Service unavailable", 503, "the database is unavailable")),
    ("outcome_already_recorded", lambda: OutcomeAlreadyRecorded("t1/c1"), 500, {}, INTERNAL),
    ("store_error", lambda: StoreError("x"), 500, {}, INTERNAL),
    ("refused", lambda: TurnIdTaken("admit_turn refused"), 500, {}, INTERNAL),
    ("invalid_idempotency_key", lambda: InvalidKey("the Idempotency-Key must match X"), 400, {},
     body("invalid_idempotency_key", "Idempotency-Key header is invalid", 400,
          "the Idempotency-Key must match X")),
    ("webhook_not_configured", lambda: WebhookNotConfigured("no secret"), 400, {},
     body("webhook_not_configured", "Webhooks are not configured", 400,
          "callback_url needs a webhook signing secret, and none is configured")),
    ("forbidden_role", lambda: ForbiddenRole("reader"), 403, {},
     body("forbidden_role", "The principal's role may not do this", 403,
          "a reader may not write")),
    ("validation_error", lambda: RequestInvalid("body.input.0.content", "is too long"), 422, {},
     body("validation_error", "Request is invalid", 422, "invalid field(s): body.input.0.content",
          errors=[{"loc": ["body", "input", "0", "content"], "msg": "is too long"}])),
    ("answer_invalid", lambda: AnswerInvalid("body.answer", "'x' is not an integer"), 422, {},
     body("validation_error", "Request is invalid", 422, "invalid field(s): body.answer",
          errors=[{"loc": ["body", "answer"], "msg": "'x' is not an integer"}])),
    ("project_mismatch", lambda: projects.ProjectMismatch(), 409, {},
     body("project_mismatch", "Session belongs to another project", 409,
          "the turn names another project than its session's")),
    ("attachment_not_found",
     lambda: attachments.AttachmentRefused(attachments.NOT_FOUND, 0, "no such attachment"),
     422, {},
     body("attachment_not_found", "attachment_not_found", 422,
          "body.attachments.0: no such attachment",
          errors=[{"loc": ["body", "attachments", "0"], "msg": "no such attachment"}])),
    ("attachment_not_ready",
     lambda: attachments.AttachmentRefused(attachments.NOT_READY, 1, "not completed"), 422, {},
     body("attachment_not_ready", "attachment_not_ready", 422,
          "body.attachments.1: not completed",
          errors=[{"loc": ["body", "attachments", "1"], "msg": "not completed"}])),
    ("unknown_agent", lambda: UnknownAgent("nope"), 422, {},
     body("unknown_agent", "Unknown agent", 422, "no agent of that name is declared")),
    ("invalid_definition", lambda: DefinitionError("bad"), 500, {}, INTERNAL),
    ("budget_exceeded", lambda: BudgetExceeded("over", bound="max_model_calls", limit=3), 500,
     {}, INTERNAL),
    ("unauthorized", auth._unauthorized, 401, {"www-authenticate": "Bearer"},
     body("unauthorized", "Unauthorized", 401, "a valid bearer token is required")),
    ("auth_not_configured", lambda: caught(auth.authenticate, TokenTable([]), "Bearer x"), 503,
     {}, body("auth_not_configured", "Authentication is not configured", 503,
              "no API tokens are configured")),
    ("stream_token_invalid", stream_tokens._invalid, 401, {},
     body("unauthorized", "Unauthorized", 401, "a valid stream token is required")),
    ("stream_tokens_not_configured", stream_tokens._not_configured, 503, {},
     body("stream_tokens_not_configured", "Stream tokens are not configured", 503,
          "no stream token secret is configured")),
    ("payload_too_large", lambda: limits._too_large(1024), 413, {},
     body("payload_too_large", "Request body is too large", 413,
          "the request body is above 1024 bytes")),
    ("upload_too_large", http_attachments._body_too_large, 413, {},
     body("payload_too_large", "Request body is too large", 413,
          "the request body is above 266240 bytes", limit=266240)),
    ("attachment_too_large", attachments.too_large, 413, {},
     body("attachment_too_large", "attachment_too_large", 413,
          "the attachment is above 196608 bytes", limit=196608)),
    ("bad_page_cursor", pages.bad_cursor, 422, {},
     body("validation_error", "Request is invalid", 422, "invalid field(s): query.before",
          errors=[{"loc": ["query", "before"], "msg": "not a cursor of this listing"}])),
    ("redis_down", lambda: redis.ConnectionError("refused"), 503, {"retry-after": "1"},
     body("unavailable", "Service unavailable", 503, "redis is unavailable")),
    ("crash", lambda: ValueError("x"), 500, {}, INTERNAL),
    ("http_404", lambda: HTTPException(404, "Not Found"), 404, {},
     body("not_found", "Not found", 404, "Not Found")),
    ("http_405", lambda: HTTPException(405, "Method Not Allowed", headers={"Allow": "GET"}),
     405, {"allow": "GET"},
     body("method_not_allowed", "Method not allowed", 405, "Method Not Allowed")),
    ("http_400", lambda: HTTPException(400, None), 400, {},
     body("http_error", "HTTP error", 400, "Bad Request")),
]

#: (name, the code and the text MCP answers with, A2A's error class and its data)
EDGES: list[tuple[str, str, str, str, dict[str, Any] | None]] = [
    ("not_found", "not_found", "session not found", "TaskNotFoundError", None),
    ("idempotency_conflict", "idempotency_conflict",
     "this Idempotency-Key was already used with another request", "InvalidParamsError",
     {"code": "idempotency_conflict"}),
    ("session_agent_conflict", "session_agent_conflict", "the session is bound to another agent",
     "InvalidParamsError", {"code": "session_agent_conflict"}),
    ("session_busy", "session_busy", "the session has an active turn (multitask=reject)",
     "InvalidParamsError", {"code": "session_busy"}),
    ("input_not_open", "input_not_open", "the input request is not open", "InvalidParamsError",
     {"code": "input_not_open"}),
    ("input_expired", "input_expired", "the input request expired unanswered",
     "InvalidParamsError", {"code": "input_expired"}),
    ("input_forbidden", "input_forbidden", "this principal may not answer the request",
     "InvalidRequestError", {"code": "input_forbidden"}),
    ("turn_not_active", "turn_not_active", "the turn has already ended",
     "TaskNotCancelableError", None),
    ("quota_exceeded", "quota_exceeded", "the session quota of 3 is reached",
     "InvalidParamsError", {"code": "quota_exceeded"}),
    ("cursor_ahead", "cursor_ahead", "cursor 7 is beyond the head seq", "InvalidParamsError",
     {"code": "cursor_ahead"}),
    ("resync_required", "resync_required", "cursor 2 is before the earliest retained seq 5",
     "InvalidParamsError", {"code": "resync_required"}),
    ("store_unavailable", "unavailable", "the database is unavailable", "InternalError",
     {"code": "unavailable"}),
    ("outcome_already_recorded", "internal", "internal error", "InternalError",
     {"code": "internal"}),
    ("store_error", "internal", "internal error", "InternalError", {"code": "internal"}),
    ("refused", "internal", "internal error", "InternalError", {"code": "internal"}),
    ("invalid_idempotency_key", "invalid_idempotency_key", "the Idempotency-Key must match X",
     "InvalidParamsError", {"code": "invalid_idempotency_key"}),
    ("webhook_not_configured", "webhook_not_configured",
     "callback_url needs a webhook signing secret, and none is configured",
     "InvalidParamsError", {"code": "webhook_not_configured"}),
    ("forbidden_role", "forbidden_role", "a reader may not write", "InvalidRequestError",
     {"code": "forbidden_role"}),
    ("validation_error", "validation_error", "invalid field(s): body.input.0.content",
     "InvalidParamsError", {"code": "validation_error"}),
    ("answer_invalid", "validation_error", "invalid field(s): body.answer", "InvalidParamsError",
     {"code": "validation_error",
      "errors": [{"field": "body.answer", "message": "'x' is not an integer"}]}),
    # off HTTP it was answered as an unexpected error before issue 22 (no table had it): kept
    ("project_mismatch", "internal", "internal error", "InternalError", {"code": "internal"}),
]
# fmt: on


@pytest.fixture(scope="module")
def http() -> TestClient:
    app = FastAPI()
    problems.install(app)
    raisers = {name: make for name, make, *_ in HTTP}

    @app.get("/raise/{name}")
    def _(name: str) -> None:
        raise raisers[name]()

    return TestClient(app, raise_server_exceptions=False)


@pytest.mark.parametrize(
    ("name", "status", "headers", "expected"), [(n, s, h, b) for n, _, s, h, b in HTTP]
)
def test_every_problem_keeps_its_status_headers_and_body(http, name, status, headers, expected):
    response = http.get(f"/raise/{name}")
    assert response.status_code == status
    assert response.headers["content-type"] == "application/problem+json"
    assert {k: response.headers.get(k) for k in headers} == headers
    assert response.json() == expected


def a2a_error(exc: BaseException) -> Any:
    """What A2A's edge raises for ``exc``."""
    with pytest.raises(Exception) as info, edge():
        raise exc
    return info.value


@pytest.mark.parametrize(("name", "code", "detail", "a2a", "data"), EDGES)
def test_mcp_and_a2a_answer_each_error_as_before(name, code, detail, a2a, data):
    make = next(make for n, make, *_ in HTTP if n == name)
    problem = problems.from_store_error(make())  # what MCP answers: code and text
    assert (problem.code, problem.detail) == (code, detail)
    answer = a2a_error(make())
    assert (type(answer).__name__, getattr(answer, "data", None)) == (a2a, data)
    if a2a not in ("TaskNotFoundError", "TaskNotCancelableError"):
        assert answer.message == detail


def test_a2a_answers_an_unknown_agent_and_a_runtime_error():
    answer = a2a_error(UnknownAgent("nope"))
    assert (type(answer).__name__, answer.message, answer.data) == (
        "InvalidParamsError",
        "no agent of that name is declared",
        {"code": "unknown_agent"},
    )
    answer = a2a_error(DefinitionError("bad"))
    assert (type(answer).__name__, answer.message, answer.data) == (
        "InternalError",
        "internal error",
        {"code": "internal"},
    )
