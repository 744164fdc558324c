"""The requests of the API, without I/O: one function per route builds a ``ApiCall`` (the
method, path, query, headers, body and timeout of one request, and how its answer is
read); the sync and async clients only send it. ``Config`` holds what every call shares
(base URL, token, timeouts), from the arguments or the environment."""

from __future__ import annotations

import base64
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Generic, TypeVar
from urllib.parse import quote

import httpx
from pydantic import BaseModel

from turnkeep.client.errors import checked, parsed
from turnkeep.client.settings import ClientSettings
from turnkeep.client.sse import Cursor
from turnkeep.feedback import Feedback, FeedbackSummary
from turnkeep.inbox import InboxPage
from turnkeep.models import (
    AgentList,
    AgentVersions,
    Attachment,
    Binding,
    BindingList,
    EventPage,
    Fork,
    Project,
    ProjectPage,
    Session,
    SessionPage,
    StreamToken,
    Timeline,
    Turn,
    TurnPage,
    TurnUpgrade,
    VersionUpgrade,
)
from turnkeep.schedules import Schedule, SchedulePage

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


def _turn(response: httpx.Response) -> Turn:
    return parsed(response, Turn)


def _reader(model: type[_M]) -> Callable[[httpx.Response], _M]:
    return lambda response: parsed(response, model)


def _content(response: httpx.Response) -> bytes:
    return checked(response).content


def _nothing(response: httpx.Response) -> None:
    checked(response)


def _page(limit: int, after: str | None) -> dict[str, str | int]:
    return {"limit": limit} if after is None else {"limit": limit, "after": after}


def _key(idempotency_key: str | None) -> dict[str, str]:
    """The Idempotency-Key of a create: a new one when none is given, so that a retry
    of the same call object reaches what the first made, never a second one."""
    return {"Idempotency-Key": idempotency_key or uuid.uuid4().hex}


def _messages(text_or_messages: Messages) -> list[dict[str, str]]:
    if isinstance(text_or_messages, str):
        return [{"role": "user", "content": text_or_messages}]
    return [{"role": m["role"], "content": m["content"]} for m in text_or_messages]


def _turn_path(sid: str, tid: str, tail: str = "") -> str:
    return f"/v1/sessions/{sid}/turns/{tid}{tail}"


def _attachment_path(session_id: str, attachment_id: str = "", tail: str = "") -> str:
    base = f"/v1/sessions/{session_id}/attachments"
    return f"{base}/{attachment_id}{tail}" if attachment_id else base


def events_path(session_id: str) -> str:
    return f"/v1/sessions/{session_id}/events"


# -- turns -------------------------------------------------------------------------------


def admit(
    session_id: str,
    agent: str,
    text_or_messages: Messages,
    *,
    idempotency_key: str | None,
    multitask: str | None,
    output_schema: Mapping[str, Any] | None,
    budget: Mapping[str, Any] | None,
    project: str | None,
    attachments: Sequence[str] | None,
    agent_version: str | None = None,
    priority: int | None = None,
    expires_after: int | None = None,
    metadata: Mapping[str, str] | None = None,
    session_metadata: Mapping[str, str] | None = None,
) -> ApiCall[Turn]:
    body: dict[str, Any] = {"agent": agent, "input": _messages(text_or_messages)}
    labels = {"metadata": metadata, "session_metadata": session_metadata}
    body.update({k: dict(v) for k, v in labels.items() if v})
    if agent_version is not None:
        body["agent_version"] = agent_version
    if expires_after is not None:
        body["expires_after"] = expires_after
    if priority is not None:
        body["priority"] = priority
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
    path = f"/v1/sessions/{session_id}/turns"
    return ApiCall("POST", path, _turn, json=body, headers=_key(idempotency_key))


def get(session_id: str, turn_id: str) -> ApiCall[Turn]:
    return ApiCall("GET", _turn_path(session_id, turn_id), _turn)


def deadline(timeout: float) -> float:
    """When a ``wait`` of ``timeout`` seconds started now gives up."""
    return time.monotonic() + timeout


def wait_poll(
    config: Config, session_id: str, turn_id: str, until: float
) -> tuple[ApiCall[Turn], bool]:
    """The next request of a ``wait`` that gives up at ``until`` (``deadline``): a long
    poll of at most ``config.poll`` seconds, or, once the time is up, a plain read that
    is the last (``True``). ``wait`` returns a turn that is terminal or awaits input."""
    left = until - time.monotonic()
    if left <= 0:
        return get(session_id, turn_id), True
    chunk = min(left, config.poll)
    call = ApiCall(
        "GET",
        _turn_path(session_id, turn_id),
        _turn,
        params={"wait": f"{max(chunk, 0.001):.3f}"},
        timeout=chunk + config.timeout,
    )
    return call, False


def waited(turn: Turn, last: bool) -> bool:
    """A ``wait`` answers with this turn."""
    return last or turn.terminal or turn.awaiting_input


def cancel(session_id: str, turn_id: str) -> ApiCall[Turn]:
    return ApiCall("POST", _turn_path(session_id, turn_id, "/cancel"), _turn)


def answer(
    session_id: str, turn_id: str, request_id: str, body: Mapping[str, Any]
) -> ApiCall[Turn]:
    path = _turn_path(session_id, turn_id, f"/inputs/{request_id}")
    return ApiCall("POST", path, _turn, json=dict(body))


def answer_many(
    session_id: str, turn_id: str, answers: Mapping[str, Mapping[str, Any]]
) -> ApiCall[Turn]:
    """Several open requests of the turn's wait at once: {request id: answer}."""
    body = {"answers": [{"request_id": r, "response": dict(a)} for r, a in answers.items()]}
    return ApiCall("POST", _turn_path(session_id, turn_id, "/inputs"), _turn, json=body)


def decide(
    session_id: str, turn_id: str, request_id: str, approved: bool, reason: str
) -> ApiCall[Turn]:
    """The answer to an approval request: ``approve`` and ``deny``."""
    body: dict[str, Any] = {"approved": approved, **({"reason": reason} if reason else {})}
    return answer(session_id, turn_id, request_id, body)


def timeline(session_id: str, turn_id: str) -> ApiCall[Timeline]:
    return ApiCall("GET", _turn_path(session_id, turn_id, "/timeline"), _reader(Timeline))


def upgrade_turn(session_id: str, turn_id: str) -> ApiCall[TurnUpgrade]:
    path = _turn_path(session_id, turn_id, "/upgrade")
    return ApiCall("POST", path, _reader(TurnUpgrade))


# -- agents and their versions -----------------------------------------------------------


def _agent_path(name: str, tail: str = "") -> str:
    return f"/v1/agents/{quote(name, safe='')}{tail}"


def agents() -> ApiCall[AgentList]:
    return ApiCall("GET", "/v1/agents", _reader(AgentList))


def agent_versions(name: str) -> ApiCall[AgentVersions]:
    return ApiCall("GET", _agent_path(name, "/versions"), _reader(AgentVersions))


def upgrade_version(name: str, definition_hash: str) -> ApiCall[VersionUpgrade]:
    path = _agent_path(name, f"/versions/{quote(definition_hash, safe='')}/upgrade")
    return ApiCall("POST", path, _reader(VersionUpgrade))


# -- sessions, events --------------------------------------------------------------------


def session(session_id: str) -> ApiCall[Session]:
    return ApiCall("GET", f"/v1/sessions/{session_id}", _reader(Session))


def sessions(limit: int, after: str | None) -> ApiCall[SessionPage]:
    return ApiCall("GET", "/v1/sessions", _reader(SessionPage), params=_page(limit, after))


def turns(session_id: str, limit: int, after: str | None) -> ApiCall[TurnPage]:
    path = f"/v1/sessions/{session_id}/turns"
    return ApiCall("GET", path, _reader(TurnPage), params=_page(limit, after))


def event_page(session_id: str, after: int, limit: int) -> ApiCall[EventPage]:
    return ApiCall(
        "GET",
        events_path(session_id),
        _reader(EventPage),
        params={"after": after, "limit": limit},
        headers={"Accept": "application/json"},
    )


def stream_token(session_id: str) -> ApiCall[StreamToken]:
    return ApiCall("POST", f"/v1/sessions/{session_id}/stream-tokens", _reader(StreamToken))


# -- attachments, forks, projects --------------------------------------------------------


def upload(
    session_id: str,
    content: bytes,
    *,
    filename: str,
    content_type: str,
    idempotency_key: str | None,
) -> ApiCall[Attachment]:
    body = {
        "filename": filename,
        "content_type": content_type,
        "data_base64": base64.b64encode(content).decode("ascii"),
    }
    return ApiCall(
        "POST",
        _attachment_path(session_id),
        _reader(Attachment),
        json=body,
        headers=_key(idempotency_key),
    )


def attachment(session_id: str, attachment_id: str) -> ApiCall[Attachment]:
    return ApiCall("GET", _attachment_path(session_id, attachment_id), _reader(Attachment))


def attachment_content(session_id: str, attachment_id: str) -> ApiCall[bytes]:
    return ApiCall("GET", _attachment_path(session_id, attachment_id, "/content"), _content)


def delete_attachment(session_id: str, attachment_id: str) -> ApiCall[None]:
    return ApiCall("DELETE", _attachment_path(session_id, attachment_id), _nothing)


def fork(
    session_id: str, at_seq: int, new_session_id: str | None, idempotency_key: str | None
) -> ApiCall[Fork]:
    body: dict[str, Any] = {"at_seq": at_seq}
    if new_session_id is not None:
        body["session_id"] = new_session_id
    path = f"/v1/sessions/{session_id}/fork"
    headers = _key(idempotency_key or new_session_id)
    return ApiCall("POST", path, _reader(Fork), json=body, headers=headers)


def rerun(
    session_id: str,
    turn_id: str,
    from_step: int,
    *,
    replace: Mapping[str, Any] | None,
    fork: bool,
    new_session_id: str | None,
    idempotency_key: str | None,
) -> ApiCall[Turn]:
    body: dict[str, Any] = {"from_step": from_step}
    if replace is not None:
        body["replace"] = dict(replace)
    if fork:
        body["fork"] = True
    if new_session_id is not None:
        body["session_id"] = new_session_id
    path = _turn_path(session_id, turn_id, "/rerun")
    return ApiCall("POST", path, _reader(Turn), json=body, headers=_key(idempotency_key))


def create_project(
    project_id: str | None, overrides: Mapping[str, Any] | None, idempotency_key: str | None
) -> ApiCall[Project]:
    body: dict[str, Any] = {"overrides": dict(overrides or {})}
    if project_id is not None:
        body["project_id"] = project_id
    headers = _key(idempotency_key or project_id)
    return ApiCall("POST", "/v1/projects", _reader(Project), json=body, headers=headers)


def project(project_id: str) -> ApiCall[Project]:
    return ApiCall("GET", f"/v1/projects/{project_id}", _reader(Project))


def projects(limit: int, after: str | None) -> ApiCall[ProjectPage]:
    return ApiCall("GET", "/v1/projects", _reader(ProjectPage), params=_page(limit, after))


def update_project(project_id: str, overrides: Mapping[str, Any]) -> ApiCall[Project]:
    body = {"overrides": dict(overrides)}
    return ApiCall("PATCH", f"/v1/projects/{project_id}", _reader(Project), json=body)


# -- schedules ---------------------------------------------------------------------------


def schedule_body(
    agent: str,
    messages: Messages,
    cron: str | None,
    every_seconds: float | None,
    timezone: str,
    schedule_id: str | None,
    session_id: str | None,
    missed: str,
    at: datetime | None = None,
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "agent": agent,
        "input": _messages(messages),
        "timezone": timezone,
        "missed": missed,
    }
    optional = {
        "cron": cron,
        "every_seconds": every_seconds,
        "schedule_id": schedule_id,
        "session_id": session_id,
        "at": None if at is None else at.isoformat(),
    }
    body.update({k: v for k, v in optional.items() if v is not None})
    return body


def create_schedule(body: Mapping[str, Any], idempotency_key: str | None) -> ApiCall[Schedule]:
    headers = _key(idempotency_key or body.get("schedule_id"))
    return ApiCall("POST", "/v1/schedules", _reader(Schedule), json=dict(body), headers=headers)


def schedule(schedule_id: str) -> ApiCall[Schedule]:
    return ApiCall("GET", f"/v1/schedules/{quote(schedule_id, safe='')}", _reader(Schedule))


def schedules(limit: int, after: str | None) -> ApiCall[SchedulePage]:
    params: dict[str, Any] = {"limit": limit, **({"after": after} if after else {})}
    return ApiCall("GET", "/v1/schedules", _reader(SchedulePage), params=params)


def pause_schedule(schedule_id: str, paused: bool) -> ApiCall[Schedule]:
    verb = "pause" if paused else "resume"
    path = f"/v1/schedules/{quote(schedule_id, safe='')}/{verb}"
    return ApiCall("POST", path, _reader(Schedule))


def delete_schedule(schedule_id: str) -> ApiCall[None]:
    return ApiCall("DELETE", f"/v1/schedules/{quote(schedule_id, safe='')}", _nothing)


# -- feedback ----------------------------------------------------------------------------


def give_feedback(session_id: str, turn_id: str, body: Mapping[str, Any]) -> ApiCall[Feedback]:
    path = _turn_path(session_id, turn_id, "/feedback")
    return ApiCall("POST", path, _reader(Feedback), json=dict(body))


def feedback_summary(agent: str) -> ApiCall[FeedbackSummary]:
    return ApiCall("GET", _agent_path(agent, "/feedback"), _reader(FeedbackSummary))


def inbox(limit: int, after: str | None) -> ApiCall[InboxPage]:
    params: dict[str, Any] = {
        "state": "open",
        "limit": limit,
        **({"after": after} if after else {}),
    }
    return ApiCall("GET", "/v1/inbox", _reader(InboxPage), params=params)


# -- chat bridges' bindings (docs/bridges.md) ----------------------------------------------


def create_binding(body: Mapping[str, Any]) -> ApiCall[Binding]:
    return ApiCall("POST", "/v1/bridges/bindings", _reader(Binding), json=dict(body))


def bindings() -> ApiCall[BindingList]:
    return ApiCall("GET", "/v1/bridges/bindings", _reader(BindingList))


def revoke_binding(binding_id: str) -> ApiCall[Binding]:
    path = f"/v1/bridges/bindings/{quote(binding_id, safe='')}"
    return ApiCall("DELETE", path, _reader(Binding))
