"""A typed Python client of the turnkeep HTTP API: ``Client`` (sync), ``AsyncClient``.

    from turnkeep.client import Client

    with Client() as tk:                          # TURNKEEP_URL, TURNKEEP_TOKEN
        turn = tk.admit("s-1", "demo", "Weather in Paris?")
        for event in tk.events("s-1", after=turn.accepted_seq - 1):
            print(event.seq, event.type)
            if event.turn_id == turn.turn_id and event.terminal:
                break
        print(tk.wait("s-1", turn.turn_id, timeout=60).result)

Every method is one route of the API (DESIGN.md, "HTTP surface"). ``admit`` sends an
``Idempotency-Key`` (the turn id): one is generated when none is given, so a call
retried after a lost answer reaches the same turn, never a second one. ``events``
follows the session's SSE and reconnects by itself from the last seq it yielded
(``Last-Event-ID``) after a dropped connection, a read timeout, a 5xx or the
server's ``stream.resume``; a cursor the journal no longer holds raises
``ResyncRequired``. Every failure is a ``TurnkeepError`` with the problem's ``code``
and HTTP ``status``. Imports nothing of api/ (DESIGN.md, "Layout").
"""

from __future__ import annotations

import base64
import json
import os
import time
import uuid
from collections.abc import AsyncGenerator, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Self, TypeVar

import anyio
import httpx
from pydantic import BaseModel, ValidationError

from turnkeep.models import (
    TERMINAL_EVENTS,
    TERMINAL_STATES,
    Attachment,
    Delta,
    Event,
    EventPage,
    Fork,
    MessagePage,
    PendingInput,
    Project,
    ProjectPage,
    Session,
    SessionPage,
    StreamToken,
    Timeline,
    Turn,
    TurnPage,
    TurnState,
)

__all__ = [
    "TERMINAL_EVENTS",
    "TERMINAL_STATES",
    "AsyncClient",
    "Attachment",
    "Client",
    "Delta",
    "Event",
    "EventPage",
    "Fork",
    "MessagePage",
    "PendingInput",
    "Project",
    "ProjectPage",
    "ResyncRequired",
    "Session",
    "SessionPage",
    "StreamToken",
    "Timeline",
    "Turn",
    "TurnPage",
    "TurnState",
    "TurnkeepError",
    "Unreachable",
]

DEFAULT_URL = "http://127.0.0.1:8000"


#: a turn's input: one user message's text, or ``[{"role": …, "content": …}, …]``
Messages = str | Sequence[Mapping[str, str]]


# -- errors -------------------------------------------------------------------------


class TurnkeepError(Exception):
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


class Unreachable(TurnkeepError):
    """Raised when the API cannot be reached (connection refused or lost, timeout)."""

    def __init__(self, detail: str) -> None:
        super().__init__("unreachable", detail)


class ResyncRequired(TurnkeepError):
    """Raised when an event cursor is before the earliest retained seq: rebuild the
    state from the turns, then follow on from ``earliest - 1``."""

    @property
    def earliest(self) -> int:
        return int(self.problem.get("earliest", 0))

    @property
    def latest(self) -> int:
        return int(self.problem.get("latest", 0))


def _error(response: httpx.Response) -> TurnkeepError:
    try:
        body = response.json()
    except ValueError:
        body = None
    if not isinstance(body, dict):
        body = {"code": "http_error", "detail": response.reason_phrase}
    code, detail = str(body.get("code", "http_error")), str(body.get("detail", ""))
    cls = ResyncRequired if code == "resync_required" else TurnkeepError
    return cls(code, detail, status=response.status_code, problem=body)


def _check(response: httpx.Response) -> httpx.Response:
    if response.status_code >= 400:
        raise _error(response)
    return response


# -- wire models: turnkeep/models.py, shared with the API's OpenAPI document ------------


_M = TypeVar("_M", bound=BaseModel)


def _parsed(response: httpx.Response, model: type[_M]) -> _M:
    _check(response)
    try:
        return model.model_validate(response.json())
    except (ValueError, ValidationError) as exc:
        raise TurnkeepError(
            "invalid_response", f"not a {model.__name__}: {exc}", status=response.status_code
        ) from None


def _turn(response: httpx.Response) -> Turn:
    return _parsed(response, Turn)


def _page(limit: int, before: str | None) -> dict[str, str | int]:
    return {"limit": limit} if before is None else {"limit": limit, "before": before}


# -- what Client and AsyncClient share ------------------------------------------------


def _messages(text_or_messages: Messages) -> list[dict[str, str]]:
    if isinstance(text_or_messages, str):
        return [{"role": "user", "content": text_or_messages}]
    return [{"role": m["role"], "content": m["content"]} for m in text_or_messages]


def _admission(
    agent: str,
    text_or_messages: Messages,
    idempotency_key: str | None,
    multitask: str | None,
    output_schema: Mapping[str, Any] | None,
    budget: Mapping[str, Any] | None,
    project: str | None = None,
    attachments: Sequence[str] | None = None,
) -> tuple[dict[str, str], dict[str, Any]]:
    body: dict[str, Any] = {"agent": agent, "input": _messages(text_or_messages)}
    if multitask is not None:
        body["multitask"] = multitask
    if output_schema is not None:
        body["output_schema"] = dict(output_schema)
    if budget is not None:
        body["budget"] = dict(budget)
    if project is not None:
        body["project"] = project
    if attachments:
        body["attachments"] = list(attachments)
    return _key(idempotency_key), body


def _key(idempotency_key: str | None) -> dict[str, str]:
    """The Idempotency-Key of a create: a new one when none is given, so that a retry
    of the same call object reaches what the first made, never a second one."""
    return {"Idempotency-Key": idempotency_key or uuid.uuid4().hex}


def _upload(
    content: bytes, filename: str, content_type: str, idempotency_key: str | None
) -> tuple[dict[str, str], dict[str, Any]]:
    body = {
        "filename": filename,
        "content_type": content_type,
        "data_base64": base64.b64encode(content).decode("ascii"),
    }
    return _key(idempotency_key), body


def _fork(
    at_seq: int, session_id: str | None, idempotency_key: str | None
) -> tuple[dict[str, str], dict[str, Any]]:
    body: dict[str, Any] = {"at_seq": at_seq}
    if session_id is not None:
        body["session_id"] = session_id
    return _key(idempotency_key or session_id), body


def _project(
    project_id: str | None, overrides: Mapping[str, Any] | None, idempotency_key: str | None
) -> tuple[dict[str, str], dict[str, Any]]:
    body: dict[str, Any] = {"overrides": dict(overrides or {})}
    if project_id is not None:
        body["project_id"] = project_id
    return _key(idempotency_key or project_id), body


def _attachment_path(session_id: str, attachment_id: str = "", tail: str = "") -> str:
    base = f"/v1/sessions/{session_id}/attachments"
    return f"{base}/{attachment_id}{tail}" if attachment_id else base


@dataclass
class _Frame:
    """One dispatched SSE frame; ``comment`` for a ``:`` line (the heartbeat)."""

    event: str = "message"
    id: str | None = None
    data: list[str] = field(default_factory=list)
    comment: bool = False


class SSEParser:
    """The text/event-stream framing, fed one line at a time (without its newline)."""

    def __init__(self) -> None:
        self._frame = _Frame()
        self._fields = False

    def feed(self, line: str) -> _Frame | None:
        if line == "":
            frame, fields = self._frame, self._fields
            self._frame, self._fields = _Frame(), False
            return frame if fields else None
        if line.startswith(":"):
            return _Frame(comment=True)
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        self._fields = True
        if name == "data":
            self._frame.data.append(value)
        elif name == "event":
            self._frame.event = value
        elif name == "id":
            self._frame.id = value
        return None


class _Reconnect(Exception):
    """The stream ended or failed in a way its next connection recovers from."""


@dataclass
class _Cursor:
    """Where a followed stream stands, and how it resumes: after every committed event
    it yielded, from that seq (``Last-Event-ID``); a connection that delivered nothing
    at all (not even a heartbeat) counts as a failure, ``retries`` in a row give up."""

    last: int
    retries: int
    backoff: float
    failures: int = 0

    def headers(self) -> dict[str, str]:
        return {"Accept": "text/event-stream", "Last-Event-ID": str(self.last)}

    def opened(self, response: httpx.Response) -> None:
        if response.status_code >= 500 or response.status_code == 429:
            raise _Reconnect(f"HTTP {response.status_code}")
        _check(response)

    def take(self, frame: _Frame, deltas: bool = False) -> Event | Delta | None:
        if frame.comment:
            self.failures = 0  # a heartbeat: the connection is alive
            return None
        if frame.event == "stream.resume":  # a lagging reader: go on from the journal
            raise _Reconnect("stream.resume")
        if frame.event == "stream.resync_required":
            info = _json("\n".join(frame.data))
            raise ResyncRequired(
                "resync_required", "the retention cut passed the cursor", problem=info
            )
        self.failures = 0
        if frame.id is None:  # model.delta: speculative, never numbered
            if not deltas or frame.event != "model.delta":
                return None
            try:
                return Delta.model_validate_json("\n".join(frame.data))
            except ValidationError:
                return None  # a speculative frame is not worth failing the stream for
        try:
            event = Event.model_validate_json("\n".join(frame.data))
        except ValidationError as exc:  # reconnecting would read the same frame again
            raise TurnkeepError("invalid_event", f"event {frame.id}: {exc}") from None
        if event.seq <= self.last:
            return None
        self.last = event.seq
        return event

    def dropped(self, why: object) -> float:
        """The delay before the next connection; ``Unreachable`` past ``retries``."""
        self.failures += 1
        if self.failures > self.retries:
            raise Unreachable(f"the event stream failed {self.failures} times in a row: {why}")
        return float(min(self.backoff * 2 ** (self.failures - 1), 5.0))


def _json(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


class _Config:
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
        self.url = (url or os.environ.get("TURNKEEP_URL") or DEFAULT_URL).rstrip("/")
        token = token if token is not None else os.environ.get("TURNKEEP_TOKEN")
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

    def cursor(self, after: int) -> _Cursor:
        return _Cursor(after, self.retries, self.backoff)


def _turn_path(sid: str, tid: str, tail: str = "") -> str:
    return f"/v1/sessions/{sid}/turns/{tid}{tail}"


_RETRYABLE = (httpx.TransportError, _Reconnect)


# -- the clients ----------------------------------------------------------------------


class Client:
    """The sync client. ``transport``: an httpx transport (tests pass a MockTransport)."""

    def __init__(
        self,
        url: str | None = None,
        token: str | None = None,
        *,
        timeout: float = 30.0,
        poll: float = 10.0,
        stream_timeout: float = 60.0,
        retries: int = 8,
        backoff: float = 0.2,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.config = _Config(
            url,
            token,
            timeout=timeout,
            poll=poll,
            stream_timeout=stream_timeout,
            retries=retries,
            backoff=backoff,
        )
        self._http = httpx.Client(
            base_url=self.config.url,
            headers=self.config.headers,
            timeout=timeout,
            transport=transport,
        )

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def _send(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        try:
            return self._http.request(method, path, **kwargs)
        except httpx.TransportError as exc:
            raise Unreachable(f"{method} {path}: {type(exc).__name__}: {exc}") from exc

    def admit(
        self,
        session_id: str,
        agent: str,
        text_or_messages: Messages,
        *,
        idempotency_key: str | None = None,
        multitask: str | None = None,
        output_schema: Mapping[str, Any] | None = None,
        budget: Mapping[str, Any] | None = None,
        project: str | None = None,
        attachments: Sequence[str] | None = None,
    ) -> Turn:
        """Admit a turn (the stored one when the key was used with the same input).
        ``project``: the caller's project the session belongs to (its first turn sets
        it); ``attachments``: ids of the session's ready attachments."""
        headers, body = _admission(
            agent,
            text_or_messages,
            idempotency_key,
            multitask,
            output_schema,
            budget,
            project,
            attachments,
        )
        path = f"/v1/sessions/{session_id}/turns"
        return _turn(self._send("POST", path, json=body, headers=headers))

    def get(self, session_id: str, turn_id: str) -> Turn:
        return _turn(self._send("GET", _turn_path(session_id, turn_id)))

    def wait(self, session_id: str, turn_id: str, timeout: float) -> Turn:
        """The turn once terminal or parked on an open input request (someone must
        answer it), or as it is after ``timeout`` seconds (long polls of at most
        ``poll`` seconds each)."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return self.get(session_id, turn_id)
            chunk = min(left, self.config.poll)
            turn = _turn(
                self._send(
                    "GET",
                    _turn_path(session_id, turn_id),
                    params={"wait": f"{max(chunk, 0.001):.3f}"},
                    timeout=chunk + self.config.timeout,
                )
            )
            if turn.terminal or turn.awaiting_input:
                return turn

    def cancel(self, session_id: str, turn_id: str) -> Turn:
        """Request cancellation; 409 ``turn_not_active`` once the turn has ended."""
        return _turn(self._send("POST", _turn_path(session_id, turn_id, "/cancel")))

    def answer(
        self, session_id: str, turn_id: str, request_id: str, body: Mapping[str, Any]
    ) -> Turn:
        """Answer the turn's open input request (e.g. ``{"approved": True}``)."""
        path = _turn_path(session_id, turn_id, f"/inputs/{request_id}")
        return _turn(self._send("POST", path, json=dict(body)))

    def approve(self, session_id: str, turn_id: str, request_id: str, reason: str = "") -> Turn:
        """Approve the open approval request (``{"approved": true}``)."""
        body: dict[str, Any] = {"approved": True, **({"reason": reason} if reason else {})}
        return self.answer(session_id, turn_id, request_id, body)

    def deny(self, session_id: str, turn_id: str, request_id: str, reason: str = "") -> Turn:
        """Deny the open approval request (``{"approved": false}``)."""
        body: dict[str, Any] = {"approved": False, **({"reason": reason} if reason else {})}
        return self.answer(session_id, turn_id, request_id, body)

    def session(self, session_id: str) -> Session:
        return _parsed(self._send("GET", f"/v1/sessions/{session_id}"), Session)

    def sessions(self, *, limit: int = 50, before: str | None = None) -> SessionPage:
        """A page of the tenant's sessions, newest first (``before``: the last ``next``)."""
        return _parsed(self._send("GET", "/v1/sessions", params=_page(limit, before)), SessionPage)

    def turns(self, session_id: str, *, limit: int = 50, before: str | None = None) -> TurnPage:
        """A page of the session's turns, newest first."""
        path = f"/v1/sessions/{session_id}/turns"
        return _parsed(self._send("GET", path, params=_page(limit, before)), TurnPage)

    def timeline(self, session_id: str, turn_id: str) -> Timeline:
        """The turn's attempts, steps and waits (no message content)."""
        return _parsed(self._send("GET", _turn_path(session_id, turn_id, "/timeline")), Timeline)

    def event_page(self, session_id: str, after: int = 0, limit: int = 500) -> EventPage:
        """At most ``limit`` committed events after ``after``, as one JSON page."""
        response = self._send(
            "GET",
            f"/v1/sessions/{session_id}/events",
            params={"after": after, "limit": limit},
            headers={"Accept": "application/json"},
        )
        return _parsed(response, EventPage)

    def events(self, session_id: str, after: int = 0) -> Iterator[Event]:
        """The session's committed events with ``seq > after``, live, without end;
        reconnects from the last seq yielded whenever the stream drops."""
        for item in self.stream(session_id, after):
            if isinstance(item, Event):
                yield item

    def stream(
        self, session_id: str, after: int = 0, *, deltas: bool = False
    ) -> Iterator[Event | Delta]:
        """As ``events``, with the live model text (``Delta``) in between when
        ``deltas``: speculative, lost on a reconnect, superseded by the committed
        ``model.completed``."""
        cursor = self.config.cursor(after)
        path = f"/v1/sessions/{session_id}/events"
        while True:
            why: object = "the stream ended"
            try:
                with self._http.stream(
                    "GET", path, headers=cursor.headers(), timeout=self.config.stream_timeouts()
                ) as response:
                    if response.status_code >= 400:
                        response.read()
                    cursor.opened(response)
                    yield from _events(cursor, response.iter_lines(), deltas)
            except _RETRYABLE as exc:
                why = exc
            time.sleep(cursor.dropped(why))

    def stream_token(self, session_id: str) -> StreamToken:
        """A short-lived token to follow this session's events from a browser
        (``?stream_token=``); 503 ``stream_tokens_not_configured`` without a secret."""
        path = f"/v1/sessions/{session_id}/stream-tokens"
        return _parsed(self._send("POST", path), StreamToken)

    # -- attachments, forks, projects ----------------------------------------------------

    def upload(
        self,
        session_id: str,
        content: bytes,
        *,
        filename: str,
        content_type: str,
        idempotency_key: str | None = None,
    ) -> Attachment:
        """Upload a file to an existing session; answered once it is ``ready`` (its id
        is the key). At most 192 KiB; 413 ``attachment_too_large``, 415 for a type
        outside the allowlist."""
        headers, body = _upload(content, filename, content_type, idempotency_key)
        response = self._send("POST", _attachment_path(session_id), json=body, headers=headers)
        return _parsed(response, Attachment)

    def attachment(self, session_id: str, attachment_id: str) -> Attachment:
        return _parsed(self._send("GET", _attachment_path(session_id, attachment_id)), Attachment)

    def attachment_content(self, session_id: str, attachment_id: str) -> bytes:
        path = _attachment_path(session_id, attachment_id, "/content")
        return _check(self._send("GET", path)).content

    def delete_attachment(self, session_id: str, attachment_id: str) -> None:
        """Delete it (finished by the runtime even after a crash); 404 once gone."""
        _check(self._send("DELETE", _attachment_path(session_id, attachment_id)))

    def fork(
        self,
        session_id: str,
        at_seq: int,
        *,
        new_session_id: str | None = None,
        idempotency_key: str | None = None,
    ) -> Fork:
        """A new session whose history is this one's up to ``at_seq`` (the source is
        untouched); the same fork again answers the same new session."""
        headers, body = _fork(at_seq, new_session_id, idempotency_key)
        response = self._send("POST", f"/v1/sessions/{session_id}/fork", json=body, headers=headers)
        return _parsed(response, Fork)

    def create_project(
        self,
        project_id: str | None = None,
        *,
        overrides: Mapping[str, Any] | None = None,
        idempotency_key: str | None = None,
    ) -> Project:
        """A project owned by the caller (the token's subject), 404 to everyone else."""
        headers, body = _project(project_id, overrides, idempotency_key)
        return _parsed(self._send("POST", "/v1/projects", json=body, headers=headers), Project)

    def project(self, project_id: str) -> Project:
        return _parsed(self._send("GET", f"/v1/projects/{project_id}"), Project)

    def projects(self, *, limit: int = 50, before: str | None = None) -> ProjectPage:
        """A page of the caller's projects, newest first."""
        response = self._send("GET", "/v1/projects", params=_page(limit, before))
        return _parsed(response, ProjectPage)

    def update_project(self, project_id: str, overrides: Mapping[str, Any]) -> Project:
        """Replace its overrides; turns admitted before keep the ones they pinned."""
        body = {"overrides": dict(overrides)}
        return _parsed(self._send("PATCH", f"/v1/projects/{project_id}", json=body), Project)


def _events(cursor: _Cursor, lines: Iterable[str], deltas: bool) -> Iterator[Event | Delta]:
    parser = SSEParser()
    for line in lines:
        frame = parser.feed(line)
        if frame is not None and (item := cursor.take(frame, deltas)) is not None:
            yield item


class AsyncClient:
    """The async client: the same methods as ``Client``, awaited."""

    def __init__(
        self,
        url: str | None = None,
        token: str | None = None,
        *,
        timeout: float = 30.0,
        poll: float = 10.0,
        stream_timeout: float = 60.0,
        retries: int = 8,
        backoff: float = 0.2,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.config = _Config(
            url,
            token,
            timeout=timeout,
            poll=poll,
            stream_timeout=stream_timeout,
            retries=retries,
            backoff=backoff,
        )
        self._http = httpx.AsyncClient(
            base_url=self.config.url,
            headers=self.config.headers,
            timeout=timeout,
            transport=transport,
        )

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    async def _send(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        try:
            return await self._http.request(method, path, **kwargs)
        except httpx.TransportError as exc:
            raise Unreachable(f"{method} {path}: {type(exc).__name__}: {exc}") from exc

    async def admit(
        self,
        session_id: str,
        agent: str,
        text_or_messages: Messages,
        *,
        idempotency_key: str | None = None,
        multitask: str | None = None,
        output_schema: Mapping[str, Any] | None = None,
        budget: Mapping[str, Any] | None = None,
        project: str | None = None,
        attachments: Sequence[str] | None = None,
    ) -> Turn:
        headers, body = _admission(
            agent,
            text_or_messages,
            idempotency_key,
            multitask,
            output_schema,
            budget,
            project,
            attachments,
        )
        path = f"/v1/sessions/{session_id}/turns"
        return _turn(await self._send("POST", path, json=body, headers=headers))

    async def get(self, session_id: str, turn_id: str) -> Turn:
        return _turn(await self._send("GET", _turn_path(session_id, turn_id)))

    async def wait(self, session_id: str, turn_id: str, timeout: float) -> Turn:
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return await self.get(session_id, turn_id)
            chunk = min(left, self.config.poll)
            turn = _turn(
                await self._send(
                    "GET",
                    _turn_path(session_id, turn_id),
                    params={"wait": f"{max(chunk, 0.001):.3f}"},
                    timeout=chunk + self.config.timeout,
                )
            )
            if turn.terminal or turn.awaiting_input:
                return turn

    async def cancel(self, session_id: str, turn_id: str) -> Turn:
        return _turn(await self._send("POST", _turn_path(session_id, turn_id, "/cancel")))

    async def answer(
        self, session_id: str, turn_id: str, request_id: str, body: Mapping[str, Any]
    ) -> Turn:
        path = _turn_path(session_id, turn_id, f"/inputs/{request_id}")
        return _turn(await self._send("POST", path, json=dict(body)))

    async def approve(
        self, session_id: str, turn_id: str, request_id: str, reason: str = ""
    ) -> Turn:
        body: dict[str, Any] = {"approved": True, **({"reason": reason} if reason else {})}
        return await self.answer(session_id, turn_id, request_id, body)

    async def deny(self, session_id: str, turn_id: str, request_id: str, reason: str = "") -> Turn:
        body: dict[str, Any] = {"approved": False, **({"reason": reason} if reason else {})}
        return await self.answer(session_id, turn_id, request_id, body)

    async def session(self, session_id: str) -> Session:
        return _parsed(await self._send("GET", f"/v1/sessions/{session_id}"), Session)

    async def sessions(self, *, limit: int = 50, before: str | None = None) -> SessionPage:
        response = await self._send("GET", "/v1/sessions", params=_page(limit, before))
        return _parsed(response, SessionPage)

    async def turns(
        self, session_id: str, *, limit: int = 50, before: str | None = None
    ) -> TurnPage:
        path = f"/v1/sessions/{session_id}/turns"
        return _parsed(await self._send("GET", path, params=_page(limit, before)), TurnPage)

    async def timeline(self, session_id: str, turn_id: str) -> Timeline:
        response = await self._send("GET", _turn_path(session_id, turn_id, "/timeline"))
        return _parsed(response, Timeline)

    async def event_page(self, session_id: str, after: int = 0, limit: int = 500) -> EventPage:
        response = await self._send(
            "GET",
            f"/v1/sessions/{session_id}/events",
            params={"after": after, "limit": limit},
            headers={"Accept": "application/json"},
        )
        return _parsed(response, EventPage)

    async def events(self, session_id: str, after: int = 0) -> AsyncGenerator[Event, None]:
        async for item in self.stream(session_id, after):
            if isinstance(item, Event):
                yield item

    async def stream(
        self, session_id: str, after: int = 0, *, deltas: bool = False
    ) -> AsyncGenerator[Event | Delta, None]:
        cursor = self.config.cursor(after)
        path = f"/v1/sessions/{session_id}/events"
        while True:
            why: object = "the stream ended"
            try:
                async with self._http.stream(
                    "GET", path, headers=cursor.headers(), timeout=self.config.stream_timeouts()
                ) as response:
                    if response.status_code >= 400:
                        await response.aread()
                    cursor.opened(response)
                    parser = SSEParser()
                    async for line in response.aiter_lines():
                        frame = parser.feed(line)
                        if frame is not None and (item := cursor.take(frame, deltas)) is not None:
                            yield item
            except _RETRYABLE as exc:
                why = exc
            await anyio.sleep(cursor.dropped(why))

    async def stream_token(self, session_id: str) -> StreamToken:
        path = f"/v1/sessions/{session_id}/stream-tokens"
        return _parsed(await self._send("POST", path), StreamToken)

    # -- attachments, forks, projects ----------------------------------------------------

    async def upload(
        self,
        session_id: str,
        content: bytes,
        *,
        filename: str,
        content_type: str,
        idempotency_key: str | None = None,
    ) -> Attachment:
        headers, body = _upload(content, filename, content_type, idempotency_key)
        path = _attachment_path(session_id)
        return _parsed(await self._send("POST", path, json=body, headers=headers), Attachment)

    async def attachment(self, session_id: str, attachment_id: str) -> Attachment:
        response = await self._send("GET", _attachment_path(session_id, attachment_id))
        return _parsed(response, Attachment)

    async def attachment_content(self, session_id: str, attachment_id: str) -> bytes:
        path = _attachment_path(session_id, attachment_id, "/content")
        return _check(await self._send("GET", path)).content

    async def delete_attachment(self, session_id: str, attachment_id: str) -> None:
        _check(await self._send("DELETE", _attachment_path(session_id, attachment_id)))

    async def fork(
        self,
        session_id: str,
        at_seq: int,
        *,
        new_session_id: str | None = None,
        idempotency_key: str | None = None,
    ) -> Fork:
        headers, body = _fork(at_seq, new_session_id, idempotency_key)
        path = f"/v1/sessions/{session_id}/fork"
        return _parsed(await self._send("POST", path, json=body, headers=headers), Fork)

    async def create_project(
        self,
        project_id: str | None = None,
        *,
        overrides: Mapping[str, Any] | None = None,
        idempotency_key: str | None = None,
    ) -> Project:
        headers, body = _project(project_id, overrides, idempotency_key)
        response = await self._send("POST", "/v1/projects", json=body, headers=headers)
        return _parsed(response, Project)

    async def project(self, project_id: str) -> Project:
        return _parsed(await self._send("GET", f"/v1/projects/{project_id}"), Project)

    async def projects(self, *, limit: int = 50, before: str | None = None) -> ProjectPage:
        response = await self._send("GET", "/v1/projects", params=_page(limit, before))
        return _parsed(response, ProjectPage)

    async def update_project(self, project_id: str, overrides: Mapping[str, Any]) -> Project:
        body = {"overrides": dict(overrides)}
        response = await self._send("PATCH", f"/v1/projects/{project_id}", json=body)
        return _parsed(response, Project)
