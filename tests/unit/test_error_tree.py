"""The one error tree (runtime/errors.py) and what every edge answers for it.

Each class's ``code`` and ``status`` are pinned (a new class must be added here), and
every error a client sees keeps its answer on every surface: the HTTP problem (status,
headers, the whole body), the code and text MCP answers with, and A2A's error. The
answers were pinned before the tree was reshaped (issue 22), from the code as it was:
the reshape moved none of them."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest
import redis
from fastapi import FastAPI
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException
from starlette.testclient import TestClient

import turnkeep.api.errors
import turnkeep.embedded
import turnkeep.runtime.delegation
import turnkeep.runtime.errors
import turnkeep.store.errors
import turnkeep.worker.errors
from turnkeep.api import auth, problems
from turnkeep.api.a2a.errors import edge
from turnkeep.api.errors import (
    AdminOnly,
    AnswerInvalid,
    AttachmentNotFound,
    AttachmentPending,
    CallbackRefused,
    ForbiddenRole,
    InvalidKey,
    LiveChannelUnavailable,
    NotReady,
    PayloadTooLarge,
    RequestInvalid,
    StreamTokenRefused,
    StreamTokensNotConfigured,
    Unauthorized,
    UploadTooLarge,
    WebhookNotConfigured,
)
from turnkeep.api.http import events
from turnkeep.api.service import attachments, pages, projects
from turnkeep.runtime.errors import BudgetExceeded, DefinitionError, TurnkeepError, UnknownAgent
from turnkeep.runtime.signals import Signal
from turnkeep.runtime.tokens import TokenTable
from turnkeep.store.attachments import AttachmentNotReady
from turnkeep.store.bridges import BindingTaken
from turnkeep.store.datasets import DatasetBusy
from turnkeep.store.errors import (
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
    SessionDeleted,
    SessionMetadataConflict,
    StoreError,
    TurnIdTaken,
    TurnNotActive,
    Unavailable,
)
from turnkeep.store.forks import ForkPointAhead, ForkPointPruned, SessionExists
from turnkeep.store.promotions import PromotionConflict

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
    ("session_metadata_conflict", lambda: SessionMetadataConflict("s1 has other"), 409, {},
     body("session_metadata_conflict", "Session has other metadata", 409,
          "the session was created with other session_metadata")),
    ("callback_not_allowed", CallbackRefused, 422, {},
     body("callback_not_allowed", "Callback host is not public", 422,
          "body.callback_url: the host is, or resolves to, a loopback, private, link-local "
          "or reserved address (TURNKEEP_WEBHOOK_ALLOW_PRIVATE allows it)",
          errors=[{"loc": ["body", "callback_url"],
                   "msg": "the host is, or resolves to, a loopback, private, link-local or "
                          "reserved address (TURNKEEP_WEBHOOK_ALLOW_PRIVATE allows it)"}])),
    ("session_busy", lambda: SessionBusy("session s1 has an active turn"), 409, {},
     body("session_busy", "Session has an active turn", 409,
          "the session has an active turn (multitask=reject)")),
    ("session_deleted", lambda: SessionDeleted(
        datetime(2026, 12, 5, 10, 0, tzinfo=UTC), datetime(2026, 12, 5, 10, 1, tzinfo=UTC)),
     410, {},
     body("session_deleted", "Session was deleted", 410, "the session was deleted",
          deleted_at="2026-12-05T10:00:00+00:00", erased_at="2026-12-05T10:01:00+00:00")),
    ("session_deleted_erasing", lambda: SessionDeleted(datetime(2026, 12, 5, 10, 0, tzinfo=UTC)),
     410, {},
     body("session_deleted", "Session was deleted", 410, "the session was deleted",
          deleted_at="2026-12-05T10:00:00+00:00", erased_at=None)),
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
    ("forbidden_role_admin", lambda: AdminOnly("only an admin may declare limits"), 403, {},
     body("forbidden_role", "The principal's role may not do this", 403,
          "only a tenant's admin may do this")),
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
     lambda: AttachmentNotFound(0, "no such attachment"), 422, {},
     body("attachment_not_found", "attachment_not_found", 422,
          "body.attachments.0: no such attachment",
          errors=[{"loc": ["body", "attachments", "0"], "msg": "no such attachment"}])),
    ("attachment_not_ready",
     lambda: AttachmentPending(1, "not completed"), 422, {},
     body("attachment_not_ready", "attachment_not_ready", 422,
          "body.attachments.1: not completed",
          errors=[{"loc": ["body", "attachments", "1"], "msg": "not completed"}])),
    ("unknown_agent", lambda: UnknownAgent("nope"), 422, {},
     body("unknown_agent", "Unknown agent", 422, "no agent of that name is declared")),
    ("invalid_definition", lambda: DefinitionError("bad"), 500, {}, INTERNAL),
    ("budget_exceeded", lambda: BudgetExceeded("over", bound="max_model_calls", limit=3), 500,
     {}, INTERNAL),
    ("unauthorized", Unauthorized, 401, {"www-authenticate": "Bearer"},
     body("unauthorized", "Unauthorized", 401, "a valid bearer token is required")),
    ("auth_not_configured", lambda: caught(auth.authenticate, TokenTable([]), "Bearer x"), 503,
     {}, body("auth_not_configured", "Authentication is not configured", 503,
              "no API tokens are configured")),
    ("stream_token_invalid", StreamTokenRefused, 401, {},
     body("unauthorized", "Unauthorized", 401, "a valid stream token is required")),
    ("stream_tokens_not_configured", StreamTokensNotConfigured, 503, {},
     body("stream_tokens_not_configured", "Stream tokens are not configured", 503,
          "no stream token secret is configured")),
    ("payload_too_large", lambda: PayloadTooLarge(1024), 413, {},
     body("payload_too_large", "Request body is too large", 413,
          "the request body is above 1024 bytes")),
    ("upload_too_large", lambda: UploadTooLarge(attachments.MAX_UPLOAD_BODY), 413, {},
     body("payload_too_large", "Request body is too large", 413,
          "the request body is above 266240 bytes", limit=266240)),
    ("attachment_too_large", attachments.too_large, 413, {},
     body("attachment_too_large", "attachment_too_large", 413,
          "the attachment is above 196608 bytes", limit=196608)),
    ("bad_page_cursor", pages.bad_cursor, 422, {},
     body("validation_error", "Request is invalid", 422, "invalid field(s): query.after",
          errors=[{"loc": ["query", "after"], "msg": "not a cursor of this listing"}])),
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
    # pinned from the code before the reshape too, after the first commit of this test
    ("fork_point_pruned", lambda: ForkPointPruned(3, 5, 9), 410, {},
     body("fork_point_pruned", "fork_point_pruned", 410,
          "seq 3 is before the earliest retained seq 5", requested=3, earliest=5, latest=9)),
    ("fork_point_ahead", lambda: ForkPointAhead(12, 9), 409, {},
     body("fork_point_ahead", "fork_point_ahead", 409, "seq 12 is beyond the head seq",
          requested=12, head_seq=9)),
    ("session_exists", lambda: SessionExists("session 's2' exists and is not a fork"), 409, {},
     body("session_exists", "session_exists", 409,
          "a session of that id exists and is not this fork")),
    ("attachment_content_not_ready",
     lambda: AttachmentNotReady("the attachment's upload has not completed"), 409, {},
     body("attachment_not_ready", "attachment_not_ready", 409,
          "the attachment's upload has not completed")),
    ("unsupported_attachment_type",
     lambda: caught(attachments.decode, attachments.AttachmentUpload(
         filename="a", content_type="application/x-nope", data_base64="")), 415, {},
     body("unsupported_attachment_type", "unsupported_attachment_type", 415,
          "the attachment's content_type is not one of: text/plain, text/markdown, text/csv, "
          "application/json, application/pdf, image/png, image/jpeg, image/gif, image/webp")),
    ("invalid_cursor", lambda: caught(events._cursor, "x", None), 400, {},
     body("invalid_cursor", "Event cursor is invalid", 400,
          "the cursor must be a non-negative integer seq")),
    ("invalid_json", lambda: RequestValidationError(
        [{"type": "json_invalid", "loc": ("body", 0), "msg": "JSON decode error"}]), 400, {},
     body("invalid_json", "Request body is not valid JSON", 400,
          "the request body is not valid JSON")),
    ("fastapi_validation", lambda: RequestValidationError([
        {"type": "missing", "loc": ("body", "agent"), "msg": "Field required", "input": "s"},
        {"type": "int_parsing", "loc": ("query", "limit"), "msg": "not an int", "input": "x"},
    ]), 422, {},
     body("validation_error", "Request is invalid", 422,
          "invalid field(s): body.agent, query.limit",
          errors=[{"loc": ["body", "agent"], "msg": "Field required"},
                  {"loc": ["query", "limit"], "msg": "not an int"}])),
    ("live_channel_unavailable", LiveChannelUnavailable, 503, {"retry-after": "1"},
     body("unavailable", "Service unavailable", 503, "the live channel is unavailable")),
    # the evaluation plane (issue 28)
    ("promotion_refused", lambda: turnkeep.api.errors.PromotionRefused(3, [
        {"check": "min_pass_rate", "dataset": "core", "passed": False,
         "detail": "pass rate 0.500, at least 0.900 wanted", "experiments": ["e1"]}]), 409, {},
     body("promotion_refused", "Promotion refused", 409,
          "the promotion failed: min_pass_rate (core)", seq=3,
          failed=[{"check": "min_pass_rate", "dataset": "core", "passed": False,
                   "detail": "pass rate 0.500, at least 0.900 wanted", "experiments": ["e1"]}])),
    ("agent_not_gated", lambda: turnkeep.api.errors.AgentNotGated("demo"), 422, {},
     body("agent_not_gated", "The agent has no promotion policy", 422,
          "the agent declares no promotion policy: its latest version is its default")),
    ("promotion_conflict", lambda: PromotionConflict("moved"), 409, {},
     body("promotion_conflict", "Another promotion came first", 409,
          "another promotion of this agent was recorded meanwhile: promote again")),
    ("dataset_busy", lambda: DatasetBusy("d: no number"), 409, {},
     body("dataset_busy", "Dataset is being written", 409,
          "another version of the dataset was being created: try again")),
    ("not_ready", lambda: NotReady({"postgres": "ok", "redis": "failed"}), 503,
     {"retry-after": "1"},
     body("unavailable", "Service unavailable", 503, "not ready: redis",
          checks={"postgres": "ok", "redis": "failed"})),
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
    ("session_deleted", "session_deleted", "the session was deleted", "InvalidParamsError",
     {"code": "session_deleted"}),
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
    problem = problems.answer_off_http(make())  # what MCP answers: code and text
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


# fmt: off
#: every class of the tree in these modules, with its code and status
TREE: dict[type[TurnkeepError], tuple[str, int]] = {
    TurnkeepError: ("internal", 500),
    # the runtime's: a turn's own failures (their codes are persisted), never a client's
    turnkeep.runtime.errors.RuntimeErrorBase: ("runtime_error", 500),
    turnkeep.runtime.errors.DefinitionError: ("invalid_definition", 500),
    turnkeep.runtime.errors.UnknownProvider: ("unknown_provider", 500),
    turnkeep.runtime.errors.UnknownAgent: ("unknown_agent", 422),
    turnkeep.runtime.errors.ModelError: ("model_error", 500),
    turnkeep.runtime.errors.TransientModelError: ("model_transient", 500),
    turnkeep.runtime.errors.ProviderRateLimited: ("model_transient", 500),
    turnkeep.runtime.errors.ContextOverflow: ("context_overflow", 500),
    turnkeep.runtime.errors.PermanentModelError: ("model_failed", 500),
    turnkeep.runtime.errors.BudgetExceeded: ("budget_exceeded", 500),
    turnkeep.runtime.delegation.DelegationRefused: ("delegation_refused", 500),
    turnkeep.runtime.delegation.DelegationInvalid: ("delegation_invalid", 500),
    turnkeep.runtime.delegation.FanoutExceeded: ("delegation_fanout_exceeded", 500),
    turnkeep.runtime.delegation.DepthExceeded: ("delegation_depth_exceeded", 500),
    # the worker's: a turn fails with the ErrorCode its code names
    turnkeep.worker.errors.WorkerError: ("worker_error", 500),
    turnkeep.worker.errors.IllegalTransition: ("illegal_transition", 500),
    turnkeep.worker.errors.ModelNotAllowed: ("model_not_allowed", 500),
    turnkeep.worker.errors.ProcessorBlocked: ("processor_blocked", 500),
    # the store's
    turnkeep.store.errors.StoreError: ("store_error", 500),
    turnkeep.store.errors.NotFound: ("not_found", 404),
    turnkeep.store.errors.IdempotencyConflict: ("idempotency_conflict", 409),
    turnkeep.store.errors.SessionAgentConflict: ("session_agent_conflict", 409),
    turnkeep.store.errors.SessionMetadataConflict: ("session_metadata_conflict", 409),
    turnkeep.store.errors.SessionBusy: ("session_busy", 409),
    turnkeep.store.errors.SessionDeleted: ("session_deleted", 410),
    turnkeep.store.errors.QuotaExceeded: ("quota_exceeded", 429),
    turnkeep.store.errors.CreatorRevoked: ("creator_revoked", 403),
    turnkeep.store.errors.CursorAhead: ("cursor_ahead", 409),
    turnkeep.store.errors.ResyncRequired: ("resync_required", 410),
    turnkeep.store.errors.TurnNotActive: ("turn_not_active", 409),
    turnkeep.store.errors.InputNotOpen: ("input_not_open", 409),
    turnkeep.store.errors.InputExpired: ("input_expired", 410),
    turnkeep.store.errors.InputForbidden: ("input_forbidden", 403),
    turnkeep.store.errors.Unavailable: ("unavailable", 503),
    turnkeep.store.errors.OutcomeAlreadyRecorded: ("outcome_already_recorded", 500),
    turnkeep.store.errors.Refused: ("refused", 500),
    turnkeep.store.errors.TurnIdTaken: ("refused", 500),
    turnkeep.store.errors.RerunIdTaken: ("refused", 500),
    turnkeep.store.errors.LaneHeadMoved: ("refused", 500),
    turnkeep.store.errors.RevisionMoved: ("refused", 500),
    AttachmentNotReady: ("attachment_not_ready", 409),
    ForkPointPruned: ("fork_point_pruned", 410),
    ForkPointAhead: ("fork_point_ahead", 409),
    SessionExists: ("session_exists", 409),
    BindingTaken: ("binding_taken", 409),
    DatasetBusy: ("dataset_busy", 409),
    PromotionConflict: ("promotion_conflict", 409),
    # the service's
    turnkeep.api.errors.ServiceError: ("service_error", 500),
    turnkeep.api.errors.InvalidKey: ("invalid_idempotency_key", 400),
    turnkeep.api.errors.WebhookNotConfigured: ("webhook_not_configured", 400),
    turnkeep.api.errors.ForbiddenRole: ("forbidden_role", 403),
    turnkeep.api.errors.AdminOnly: ("forbidden_role", 403),
    turnkeep.api.errors.RequestInvalid: ("validation_error", 422),
    turnkeep.api.errors.AnswerInvalid: ("validation_error", 422),
    turnkeep.api.errors.AttachmentRefused: ("validation_error", 422),
    turnkeep.api.errors.AttachmentNotFound: ("attachment_not_found", 422),
    turnkeep.api.errors.AttachmentPending: ("attachment_not_ready", 422),
    turnkeep.api.errors.CallbackRefused: ("callback_not_allowed", 422),
    turnkeep.api.errors.ProjectMismatch: ("project_mismatch", 409),
    turnkeep.api.errors.AgentNotGated: ("agent_not_gated", 422),
    turnkeep.api.errors.PromotionRefused: ("promotion_refused", 409),
    turnkeep.api.errors.AttachmentTooLarge: ("attachment_too_large", 413),
    turnkeep.api.errors.UnsupportedAttachmentType: ("unsupported_attachment_type", 415),
    turnkeep.api.errors.InvalidCursor: ("invalid_cursor", 400),
    turnkeep.api.errors.InvalidJSON: ("invalid_json", 400),
    turnkeep.api.errors.PayloadTooLarge: ("payload_too_large", 413),
    turnkeep.api.errors.UploadTooLarge: ("payload_too_large", 413),
    turnkeep.api.errors.Unauthorized: ("unauthorized", 401),
    turnkeep.api.errors.StreamTokenRefused: ("unauthorized", 401),
    turnkeep.api.errors.AuthNotConfigured: ("auth_not_configured", 503),
    turnkeep.api.errors.BridgeSignatureInvalid: ("bridge_signature_invalid", 401),
    turnkeep.api.errors.BridgeNotConfigured: ("bridge_not_configured", 503),
    turnkeep.api.errors.WorkspaceNotFound: ("bridge_workspace_not_found", 404),
    turnkeep.api.errors.StreamTokensNotConfigured: ("stream_tokens_not_configured", 503),
    turnkeep.api.errors.MethodNotAllowed: ("method_not_allowed", 405),
    turnkeep.api.errors.HttpError: ("http_error", 400),
    turnkeep.api.errors.RedisUnavailable: ("unavailable", 503),
    turnkeep.api.errors.LiveChannelUnavailable: ("unavailable", 503),
    turnkeep.api.errors.NotReady: ("unavailable", 503),
    # the command's (turnkeep dev)
    turnkeep.embedded.EmbeddedUnavailable: ("embedded_unavailable", 500),
}
# fmt: on
MODULES = {
    m.__name__
    for m in (
        turnkeep.runtime.errors,
        turnkeep.runtime.delegation,
        turnkeep.worker.errors,
        turnkeep.api.errors,
        turnkeep.embedded,
    )
} | {
    "turnkeep.store.errors",
    "turnkeep.store.forks",
    "turnkeep.store.attachments",
    "turnkeep.store.bridges",
    "turnkeep.store.datasets",
    "turnkeep.store.promotions",
}


def _tree(root: type) -> set[type]:
    found = set(root.__subclasses__())
    for kind in list(found):
        found |= _tree(kind)
    return found


def test_each_class_carries_its_code_and_status():
    assert {kind: (kind.code, kind.status) for kind in TREE} == TREE


def test_every_error_of_these_modules_is_pinned_and_says_when_it_is_raised():
    classes = {kind for kind in _tree(TurnkeepError) if kind.__module__ in MODULES}
    assert classes - set(TREE) == set()
    for kind in classes | {TurnkeepError}:
        doc = kind.__doc__ or ""
        assert doc.startswith(("Raised ", "Root of")), kind


def test_one_root_and_signals_stand_apart():
    assert not issubclass(Signal, TurnkeepError)
    assert not any(issubclass(kind, Signal) for kind in _tree(TurnkeepError))
    # the HTTP problem is what the edge answers, no error of its own: no class is both
    assert not issubclass(problems.ProblemAnswer, BaseException)
    # the branches share no class
    assert not any(
        issubclass(k, turnkeep.store.errors.StoreError)
        for k in _tree(turnkeep.api.errors.ServiceError)
    )
