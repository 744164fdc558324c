"""Errors as ``application/problem+json`` with a stable ``code``, translated at the edge.

Every error a client sees goes through here: the tree's errors (runtime/errors.py),
each answered with the code, status and title its class carries, Redis outages,
request validation and plain HTTP errors. Bodies never carry
tenant data, ids, tokens or request input, so a resource of another tenant answers
byte for byte like a missing one; and they are redacted (runtime/obs/redact.py).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import redis
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from turnkeep.api.errors import (
    HttpError,
    InvalidJSON,
    MethodNotAllowed,
    ProjectMismatch,
    RedisUnavailable,
    RequestInvalid,
    Unauthorized,
)
from turnkeep.problems import TYPE_PREFIX, Problem
from turnkeep.runtime.errors import TurnkeepError
from turnkeep.runtime.obs import redact
from turnkeep.store.errors import NotFound

log = logging.getLogger(__name__)

MEDIA_TYPE = "application/problem+json"
#: what every error no client should see is answered with
INTERNAL_DETAIL = "internal error"


@dataclass(frozen=True)
class ProblemAnswer:
    """What the HTTP edge answers an error with: its problem (turnkeep/problems.py, the
    one declaration of the body, which the client parses too) and its headers."""

    problem: Problem
    headers: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def of(
        cls,
        kind: type[TurnkeepError],
        detail: str,
        *,
        status: int | None = None,
        headers: Mapping[str, str] | None = None,
        extra: Mapping[str, object] | None = None,
    ) -> ProblemAnswer:
        """A problem of ``kind``'s code, title and status (unless ``status`` says)."""
        body = {
            "type": TYPE_PREFIX + kind.code,
            "title": kind.title or kind.code,
            "status": kind.status if status is None else status,
            "code": kind.code,
            "detail": detail,
            **(extra or {}),
        }
        return cls(Problem.model_validate(body), headers or {})

    @property
    def status(self) -> int:
        return self.problem.status

    @property
    def code(self) -> str:
        return self.problem.code

    @property
    def detail(self) -> str:
        return self.problem.detail

    def response(self) -> JSONResponse:
        # a detail may quote what it refuses (a validation message): never a secret
        return JSONResponse(
            redact.current().redact_json(self.problem.model_dump(mode="json", exclude_unset=True)),
            status_code=self.status,
            headers=dict(self.headers),
            media_type=MEDIA_TYPE,
        )


def internal() -> ProblemAnswer:
    """What an error no client should see answers: the root's code, nothing of it."""
    return ProblemAnswer.of(TurnkeepError, INTERNAL_DETAIL)


def answer(exc: TurnkeepError) -> ProblemAnswer:
    """The problem ``exc`` answers, read from its class (details never name ids). A
    class left at 500 is no client's business: ``internal``, its name logged."""
    if exc.status == TurnkeepError.status:
        log.error("unexpected error: %s", type(exc).__name__)
        return internal()
    return ProblemAnswer.of(type(exc), exc.detail(), headers=exc.headers(), extra=exc.fields())


def answer_off_http(exc: TurnkeepError) -> ProblemAnswer:
    """The problem MCP and A2A answer ``exc`` with: HTTP's, but a project mismatch,
    which they answered as an unexpected error before issue 22 (it reached no table
    they read); kept so that the reshape changes no answer."""
    if isinstance(exc, ProjectMismatch):
        log.error("unexpected error: %s", type(exc).__name__)
        return internal()
    return answer(exc)


def _loc(loc: tuple[Any, ...] | list[Any]) -> str:
    return ".".join(str(p) for p in loc)


def from_validation_error(exc: RequestValidationError) -> ProblemAnswer:
    errors = list(exc.errors())
    if any(e.get("type") == "json_invalid" for e in errors):
        return answer(InvalidJSON())
    # loc and msg only: never echo the offending input back (it may be a prompt)
    items = [
        {"loc": [str(p) for p in e.get("loc", ())], "msg": str(e.get("msg", ""))} for e in errors
    ]
    fields = sorted({_loc(e.get("loc", ())) for e in errors})
    return ProblemAnswer.of(
        RequestInvalid, "invalid field(s): " + ", ".join(fields), extra={"errors": items}
    )


#: the errors the router answers by status; any other status is an ``HttpError``
_BY_STATUS: dict[int, type[TurnkeepError]] = {
    kind.status: kind for kind in (NotFound, MethodNotAllowed, Unauthorized)
}


def from_http_error(exc: StarletteHTTPException) -> ProblemAnswer:
    """The problem of an HTTP error the framework raised (its status, its headers)."""
    kind = _BY_STATUS.get(exc.status_code, HttpError)
    detail = exc.detail if isinstance(exc.detail, str) else str(HttpError.title)
    return ProblemAnswer.of(kind, detail, status=exc.status_code, headers=dict(exc.headers or {}))


def install(app: FastAPI) -> None:
    """Register the exception handlers that turn every error into a problem."""

    async def on_error(_: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, TurnkeepError)
        return answer(exc).response()

    async def on_redis(_: Request, exc: Exception) -> JSONResponse:
        log.warning("redis unavailable: %s", type(exc).__name__)
        return answer(RedisUnavailable()).response()

    async def on_validation(_: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, RequestValidationError)
        return from_validation_error(exc).response()

    async def on_http(_: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, StarletteHTTPException)
        return from_http_error(exc).response()

    async def on_crash(_: Request, exc: Exception) -> JSONResponse:
        log.error("unhandled error: %s", type(exc).__name__)
        return internal().response()

    app.add_exception_handler(TurnkeepError, on_error)
    app.add_exception_handler(redis.ConnectionError, on_redis)
    app.add_exception_handler(redis.TimeoutError, on_redis)
    app.add_exception_handler(RequestValidationError, on_validation)
    app.add_exception_handler(StarletteHTTPException, on_http)
    app.add_exception_handler(Exception, on_crash)
