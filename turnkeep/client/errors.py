"""The client's errors, and reading an answer of the API: a problem document becomes a
``ApiError`` (``ResyncRequired`` for ``resync_required``), a body a typed model.
No I/O: the answer was read before."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

import httpx
from pydantic import BaseModel, ValidationError

from turnkeep.problems import Problem


class ApiError(Exception):
    """Raised when the API answers a problem: ``code`` is its stable code, ``status``
    the HTTP status (``None`` when no answer came), ``problem`` the whole body."""

    def __init__(
        self,
        code: str,
        detail: str,
        *,
        status: int | None = None,
        problem: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(f"{code}: {detail}" if status is None else f"{status} {code}: {detail}")
        self.code = code
        self.detail = detail
        self.status = status
        self.problem: dict[str, Any] = dict(problem or {})


class Unreachable(ApiError):
    """Raised when the API cannot be reached (connection refused or lost, timeout)."""

    def __init__(self, detail: str) -> None:
        super().__init__("unreachable", detail)


class ResyncRequired(ApiError):
    """Raised when an event cursor is before the earliest retained seq: rebuild the
    state from the turns, then follow on from ``earliest - 1``."""

    @property
    def earliest(self) -> int:
        return int(self.problem.get("earliest", 0))

    @property
    def latest(self) -> int:
        return int(self.problem.get("latest", 0))


def problem(response: httpx.Response) -> ApiError:
    """The error an answer of 400 or more stands for: its problem document parsed with
    ``Problem`` (turnkeep/problems.py, the one the API renders); an answer that is none
    (a proxy's page) reads as well as it can."""
    try:
        body = response.json()
    except ValueError:
        body = None
    if not isinstance(body, dict):
        body = {"code": "http_error", "detail": response.reason_phrase}
    try:
        parsed = Problem.model_validate(body)
        code, detail = parsed.code, parsed.detail
    except ValidationError:
        code, detail = str(body.get("code", "http_error")), str(body.get("detail", ""))
    cls = ResyncRequired if code == "resync_required" else ApiError
    return cls(code, detail, status=response.status_code, problem=body)


def checked(response: httpx.Response) -> httpx.Response:
    """The answer, unless it is a problem (raised)."""
    if response.status_code >= 400:
        raise problem(response)
    return response


_M = TypeVar("_M", bound=BaseModel)


def parsed(response: httpx.Response, model: type[_M]) -> _M:
    """The answer's body as ``model`` (turnkeep/models.py, the API's own wire models)."""
    checked(response)
    try:
        return model.model_validate(response.json())
    except (ValueError, ValidationError) as exc:
        raise ApiError(
            "invalid_response", f"not a {model.__name__}: {exc}", status=response.status_code
        ) from None
