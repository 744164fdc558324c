"""Errors as ``application/problem+json`` with a stable ``code``, translated at the edge.

Every error a client sees goes through here: the store's and the runtime's typed
errors, Redis outages, request validation and plain HTTP errors. Bodies never carry
tenant data, ids, tokens or request input, so a resource of another tenant answers
byte for byte like a missing one; and they are redacted (runtime/redact.py).
"""

from __future__ import annotations

import logging
from typing import Any

import redis
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from api.errors import ForbiddenRole, InvalidKey, RequestInvalid, WebhookNotConfigured
from runtime.errors import UnknownAgent
from runtime.obs import redact
from store.errors import (
    CursorAhead,
    IdempotencyConflict,
    InputExpired,
    InputForbidden,
    InputNotOpen,
    NotFound,
    QuotaExceeded,
    ResyncRequired,
    SessionAgentConflict,
    SessionBusy,
    StoreError,
    TurnNotActive,
    Unavailable,
)

log = logging.getLogger(__name__)

MEDIA_TYPE = "application/problem+json"
RETRY_AFTER = "1"
#: seconds a client waits before it tries again past a quota (active turns end, streams close)
QUOTA_RETRY_AFTER = "5"

TITLES: dict[str, str] = {
    "not_found": "Not found",
    "idempotency_conflict": "Idempotency key reused with another request",
    "session_agent_conflict": "Session is bound to another agent",
    "session_busy": "Session has an active turn",
    "quota_exceeded": "Quota exceeded",
    "forbidden_role": "The principal's role may not do this",
    "cursor_ahead": "Cursor is beyond the session's head",
    "resync_required": "Cursor is before the earliest retained event",
    "unavailable": "Service unavailable",
    "unknown_agent": "Unknown agent",
    "turn_not_active": "Turn is not active",
    "input_not_open": "Input request is not open",
    "validation_error": "Request is invalid",
    "invalid_json": "Request body is not valid JSON",
    "payload_too_large": "Request body is too large",
    "invalid_idempotency_key": "Idempotency-Key header is invalid",
    "invalid_cursor": "Event cursor is invalid",
    "webhook_not_configured": "Webhooks are not configured",
    "stream_tokens_not_configured": "Stream tokens are not configured",
    "unauthorized": "Unauthorized",
    "auth_not_configured": "Authentication is not configured",
    "method_not_allowed": "Method not allowed",
    "http_error": "HTTP error",
    "internal": "Internal server error",
}


class Problem(Exception):
    """Raised by handlers to answer an RFC 9457 problem with a stable ``code``."""

    def __init__(
        self,
        status: int,
        code: str,
        detail: str,
        *,
        headers: dict[str, str] | None = None,
        extra: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(detail)
        self.status = status
        self.code = code
        self.detail = detail
        self.headers = headers or {}
        self.extra = extra or {}

    def body(self) -> dict[str, Any]:
        return {
            "type": f"urn:turnkeep:problem:{self.code}",
            "title": TITLES.get(self.code, self.code),
            "status": self.status,
            "code": self.code,
            "detail": self.detail,
            **self.extra,
        }

    def response(self) -> JSONResponse:
        # a detail may quote what it refuses (a validation message): never a secret
        return JSONResponse(
            redact.current().redact_json(self.body()),
            status_code=self.status,
            headers=self.headers,
            media_type=MEDIA_TYPE,
        )


def unavailable(detail: str) -> Problem:
    return Problem(503, "unavailable", detail, headers={"Retry-After": RETRY_AFTER})


#: store errors that answer a fixed status and code; a None detail is the error's text
_FIXED: tuple[tuple[type[StoreError], int, str, str | None], ...] = (
    (NotFound, 404, "not_found", None),
    (
        IdempotencyConflict,
        409,
        "idempotency_conflict",
        "this Idempotency-Key was already used with another request",
    ),
    (SessionAgentConflict, 409, "session_agent_conflict", "the session is bound to another agent"),
    (SessionBusy, 409, "session_busy", "the session has an active turn (multitask=reject)"),
    (InputNotOpen, 409, "input_not_open", None),
    (InputExpired, 410, "input_expired", "the input request expired unanswered"),
    (InputForbidden, 403, "input_forbidden", "this principal may not answer the request"),
    (ForbiddenRole, 403, "forbidden_role", "a reader may not write"),
    (TurnNotActive, 409, "turn_not_active", "the turn has already ended"),
    (InvalidKey, 400, "invalid_idempotency_key", None),
    (
        WebhookNotConfigured,
        400,
        "webhook_not_configured",
        "callback_url needs a webhook signing secret, and none is configured",
    ),
)


def _with_fields(exc: StoreError) -> Problem | None:
    """The problems whose body carries fields of the error."""
    if isinstance(exc, CursorAhead):
        return Problem(
            409,
            "cursor_ahead",
            f"cursor {exc.cursor} is beyond the head seq",
            extra={"cursor": exc.cursor, "head_seq": exc.head},
        )
    if isinstance(exc, ResyncRequired):
        # the events after the cursor were pruned: rebuild state (turns, /messages),
        # then follow on from earliest - 1
        return Problem(
            410,
            "resync_required",
            f"cursor {exc.requested} is before the earliest retained seq {exc.earliest}",
            extra={"requested": exc.requested, "earliest": exc.earliest, "latest": exc.latest},
        )
    if isinstance(exc, QuotaExceeded):
        # the scope and the bound only: never the tenant's or the session's ids
        return Problem(
            429,
            "quota_exceeded",
            str(exc),
            headers={"Retry-After": QUOTA_RETRY_AFTER},
            extra={"quota": exc.scope, "limit": exc.limit},
        )
    if isinstance(exc, RequestInvalid):
        return Problem(
            422,
            "validation_error",
            str(exc),
            extra={"errors": [{"loc": exc.where.split("."), "msg": exc.message}]},
        )
    return None


def from_store_error(exc: StoreError) -> Problem:
    """The client-facing problem for a store error (details never name ids)."""
    for cls, status, code, detail in _FIXED:
        if isinstance(exc, cls):
            return Problem(status, code, str(exc) if detail is None else detail)
    problem = _with_fields(exc)
    if problem is not None:
        return problem
    if isinstance(exc, Unavailable):
        return unavailable("the database is unavailable")
    log.error("unexpected store error: %s", type(exc).__name__)
    return Problem(500, "internal", "internal error")


def _loc(loc: tuple[Any, ...] | list[Any]) -> str:
    return ".".join(str(p) for p in loc)


def from_validation_error(exc: RequestValidationError) -> Problem:
    errors = list(exc.errors())
    if any(e.get("type") == "json_invalid" for e in errors):
        return Problem(400, "invalid_json", "the request body is not valid JSON")
    # loc and msg only: never echo the offending input back (it may be a prompt)
    items = [
        {"loc": [str(p) for p in e.get("loc", ())], "msg": str(e.get("msg", ""))} for e in errors
    ]
    fields = sorted({_loc(e.get("loc", ())) for e in errors})
    return Problem(
        422, "validation_error", "invalid field(s): " + ", ".join(fields), extra={"errors": items}
    )


def _http_code(status: int) -> str:
    return {404: "not_found", 405: "method_not_allowed", 401: "unauthorized"}.get(
        status, "http_error"
    )


def install(app: FastAPI) -> None:
    """Register the exception handlers that turn every error into a problem."""

    async def on_problem(_: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, Problem)
        return exc.response()

    async def on_store(_: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, StoreError)
        return from_store_error(exc).response()

    async def on_unknown_agent(_: Request, exc: Exception) -> JSONResponse:
        return Problem(422, "unknown_agent", "no agent of that name is declared").response()

    async def on_redis(_: Request, exc: Exception) -> JSONResponse:
        log.warning("redis unavailable: %s", type(exc).__name__)
        return unavailable("redis is unavailable").response()

    async def on_validation(_: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, RequestValidationError)
        return from_validation_error(exc).response()

    async def on_http(_: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, StarletteHTTPException)
        detail = exc.detail if isinstance(exc.detail, str) else TITLES["http_error"]
        return Problem(
            exc.status_code, _http_code(exc.status_code), detail, headers=dict(exc.headers or {})
        ).response()

    async def on_crash(_: Request, exc: Exception) -> JSONResponse:
        log.error("unhandled error: %s", type(exc).__name__)
        return Problem(500, "internal", "internal error").response()

    app.add_exception_handler(Problem, on_problem)
    app.add_exception_handler(StoreError, on_store)
    app.add_exception_handler(UnknownAgent, on_unknown_agent)
    app.add_exception_handler(redis.ConnectionError, on_redis)
    app.add_exception_handler(redis.TimeoutError, on_redis)
    app.add_exception_handler(RequestValidationError, on_validation)
    app.add_exception_handler(StarletteHTTPException, on_http)
    app.add_exception_handler(Exception, on_crash)
