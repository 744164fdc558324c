"""What every request of the API shares, without I/O: ``ApiCall`` (the method, path,
query, headers, body and timeout of one request, and how its answer is read), ``Config``
(base URL, token, timeouts, from the arguments or the environment), and ``Send`` /
``AsyncSend``, what a resource hands its calls to. Each resource module
(turnkeep/client/turns.py, sessions.py, …) builds its routes' calls from these; the
sync and async clients only send them."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar
from urllib.parse import quote

import httpx
from pydantic import BaseModel

from turnkeep.client.errors import checked, parsed
from turnkeep.client.settings import ClientSettings
from turnkeep.client.sse import Cursor

#: a turn's input: one user message's text, or ``[{"role": …, "content": …}, …]``
Messages = str | Sequence[Mapping[str, str]]

T = TypeVar("T")
_M = TypeVar("_M", bound=BaseModel)


class Config:
    """Base URL, token and timeouts, from the arguments or the environment."""

    def __init__(
        self,
        url: str | None,
        token: str | None,
        *,
        timeout: float,
        poll: float,
        stream_timeout: float,
        retries: int,
        backoff: float,
    ) -> None:
        env = ClientSettings.from_env()
        self.url = (url or env.url).rstrip("/")
        token = token if token is not None else env.token
        self.headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.timeout = timeout
        #: the longest single long poll ``wait`` asks for (at most the API's max_wait)
        self.poll = poll
        #: silence on an event stream longer than this drops it (heartbeats are 15 s)
        self.stream_timeout = stream_timeout
        self.retries = retries
        self.backoff = backoff

    def stream_timeouts(self) -> httpx.Timeout:
        return httpx.Timeout(self.timeout, read=self.stream_timeout)

    def cursor(self, after: int) -> Cursor:
        return Cursor(after, self.retries, self.backoff)


@dataclass(frozen=True)
class ApiCall(Generic[T]):
    """One request, and ``read``: its answer (already received) as a value or an error."""

    method: str
    path: str
    read: Callable[[httpx.Response], T]
    params: Mapping[str, str | int] | None = None
    headers: Mapping[str, str] | None = None
    json: Any = None
    #: this request's own timeout; None: the client's
    timeout: float | None = None

    def options(self) -> dict[str, Any]:
        """The httpx request options it sets (an unset one keeps the client's default)."""
        given = {
            "params": self.params,
            "headers": self.headers,
            "json": self.json,
            "timeout": self.timeout,
        }
        return {k: v for k, v in given.items() if v is not None}


class Send(Protocol):
    """How a sync resource sends a call: the client's, answering its read value."""

    def __call__(self, call: ApiCall[T], /) -> T: ...


class AsyncSend(Protocol):
    """How an async resource sends a call: the async client's, awaited."""

    def __call__(self, call: ApiCall[T], /) -> Awaitable[T]: ...


def reader(model: type[_M]) -> Callable[[httpx.Response], _M]:
    """Read an answer as ``model`` (a problem raises ``ApiError``)."""
    return lambda response: parsed(response, model)


def content(response: httpx.Response) -> bytes:
    return checked(response).content


def nothing(response: httpx.Response) -> None:
    checked(response)


def page(limit: int, after: str | None) -> dict[str, str | int]:
    """A listing's query: ``after`` is the previous page's ``next`` (docs/glossary.md)."""
    return {"limit": limit} if after is None else {"limit": limit, "after": after}


def key(idempotency_key: str | None) -> dict[str, str]:
    """The Idempotency-Key of a create: a new one when none is given, so that a retry
    of the same call object reaches what the first made, never a second one."""
    return {"Idempotency-Key": idempotency_key or uuid.uuid4().hex}


def messages(text_or_messages: Messages) -> list[dict[str, str]]:
    if isinstance(text_or_messages, str):
        return [{"role": "user", "content": text_or_messages}]
    return [{"role": m["role"], "content": m["content"]} for m in text_or_messages]


def segment(value: str) -> str:
    """One path segment, escaped."""
    return quote(value, safe="")
