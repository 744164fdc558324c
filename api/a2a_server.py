"""A2A: every agent is an A2A agent, over the submit path (api/submit.py).

Routes (a2a-sdk's JSON-RPC binding, protocol 1.0; the cards are public, the rest needs
the bearer token, whose tenant scopes every task):

- ``GET /a2a/{agent}/.well-known/agent-card.json``: the agent's card, naming
  ``POST /a2a/{agent}``, where the agent's JSON-RPC methods are served;
- ``GET /.well-known/agent-card.json`` (and ``/a2a/.well-known/agent-card.json``):
  every agent as a skill, naming ``POST /a2a``, where a new conversation names its
  agent in the message metadata (``{"skill": name}``).

Ids. The task id is the turn id, the context id the session id. A message without a
taskId admits a turn: into the session its contextId names, else into a new session
whose id is derived from the messageId (``a2a-`` + 32 hex digits of its SHA-256).
The turn id is ``{session id}.{32 hex digits of the messageId's SHA-256}``, so the
same messageId in the same context reaches the same turn (a retried message is a
replay, never a second turn), the same messageId with other content is refused
(``-32602``, data ``code: idempotency_conflict``), and a task id alone names its
session. Turns admitted over another surface have other ids: they are not A2A tasks.

States: queued -> submitted; running -> working; waiting and needs_reconciliation ->
input-required, the open request in the status message (a text part, and a data
part with what ``pending_input`` shows over HTTP) and in ``metadata.turnkeep``; once
answered, working again until a worker moves it; completed -> completed (the result
text, and its output when the turn had an output schema, as the ``result`` artifact
and the status message); failed -> failed (the typed error); cancelled -> canceled.

Answers. A message with a taskId answers the task's open request (``api.submit
.answer``): its first data part (else its text, parsed as JSON) is the answer,
validated against the request's ``response_schema``; ``metadata.request_id`` may name
the request answered (refused when it is not the open one).

A non-streaming SendMessage waits (at most ``TURNKEEP_MAX_WAIT`` seconds, then it
answers the task as it is) until the task ends or needs input; streams (send and
subscribe) are read from the journal (``api.submit.follow``) and end with it.
Errors are translated at this edge (``_edge``) into A2A's JSON-RPC errors, with the
problem code of the HTTP surface in ``data.code``.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from collections.abc import AsyncGenerator, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from typing import Any, TypeVar

import anyio
import redis
from a2a.auth.user import User
from a2a.helpers.proto_helpers import new_data_part
from a2a.server.context import ServerCallContext
from a2a.server.events import Event
from a2a.server.request_handlers.request_handler import RequestHandler, validate_request_params
from a2a.server.request_handlers.response_helpers import agent_card_to_dict
from a2a.server.routes import ServerCallContextBuilder, create_jsonrpc_routes
from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    Artifact,
    CancelTaskRequest,
    DeleteTaskPushNotificationConfigRequest,
    GetExtendedAgentCardRequest,
    GetTaskPushNotificationConfigRequest,
    GetTaskRequest,
    HTTPAuthSecurityScheme,
    ListTaskPushNotificationConfigsRequest,
    ListTaskPushNotificationConfigsResponse,
    ListTasksRequest,
    ListTasksResponse,
    Message,
    Part,
    Role,
    SecurityRequirement,
    SecurityScheme,
    SendMessageRequest,
    StringList,
    SubscribeToTaskRequest,
    Task,
    TaskArtifactUpdateEvent,
    TaskPushNotificationConfig,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
)
from a2a.utils.constants import PROTOCOL_VERSION_1_0, VERSION_HEADER, TransportProtocol
from a2a.utils.errors import (
    A2AError,
    ContentTypeNotSupportedError,
    ExtendedAgentCardNotConfiguredError,
    InternalError,
    InvalidParamsError,
    InvalidRequestError,
    PushNotificationNotSupportedError,
    TaskNotCancelableError,
    TaskNotFoundError,
    UnsupportedOperationError,
)
from a2a.utils.task import apply_history_length, validate_history_length, validate_page_size
from fastapi import APIRouter
from google.protobuf.json_format import MessageToDict
from pydantic import ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from api import problems, submit
from api.auth import Principal, principal_of
from api.errors import AnswerInvalid
from api.schemas import TurnRequest
from api.services import Services, services_of
from api.views import _pending as pending_view
from runtime.definitions import AgentDefinition
from runtime.errors import UnknownAgent
from runtime.hashing import canonical_json
from runtime.states import PARKED_STATES, EventType, TurnState
from store.errors import NotFound, StoreError, TurnNotActive
from store.records import EventRecord, TurnRecord

log = logging.getLogger(__name__)

T = TypeVar("T")

#: hex digits of the messageId's SHA-256 in a turn id (and in a derived session id)
DIGEST = 32
#: the longest contextId an A2A message may name: its turn id must stay within 128
MAX_CONTEXT = 128 - 1 - DIGEST
_CONTEXT = re.compile(rf"^[A-Za-z0-9._-]{{1,{MAX_CONTEXT}}}$")
_TASK = re.compile(rf"^(?P<sid>[A-Za-z0-9._-]{{1,{MAX_CONTEXT}}})\.[0-9a-f]{{{DIGEST}}}$")
#: seconds a cancel of a running turn waits for its worker to stop it
CANCEL_WAIT = 5.0
#: the agent cards below /a2a (per agent, and the root card again): public
#: (api/app.py passes them to ``Authenticate``, with ``ROOT_CARD``)
PUBLIC_PATTERNS = (re.compile(r"^/a2a(/[^/]+)?/\.well-known/agent-card\.json$"),)
ROOT_CARD = "/.well-known/agent-card.json"
#: journal events after which a task waits for someone, or has ended: a stream ends there
_SETTLES = frozenset(
    {
        EventType.INPUT_REQUESTED,
        EventType.TURN_NEEDS_RECONCILIATION,
        EventType.TURN_COMPLETED,
        EventType.TURN_FAILED,
        EventType.TURN_CANCELLED,
    }
)
_STATES = {
    TurnState.QUEUED: TaskState.TASK_STATE_SUBMITTED,
    TurnState.RUNNING: TaskState.TASK_STATE_WORKING,
    TurnState.WAITING: TaskState.TASK_STATE_INPUT_REQUIRED,
    TurnState.NEEDS_RECONCILIATION: TaskState.TASK_STATE_INPUT_REQUIRED,
    TurnState.COMPLETED: TaskState.TASK_STATE_COMPLETED,
    TurnState.FAILED: TaskState.TASK_STATE_FAILED,
    TurnState.CANCELLED: TaskState.TASK_STATE_CANCELED,
}


# -- ids ------------------------------------------------------------------------------


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:DIGEST]


def session_for(context_id: str, message_id: str) -> str:
    """The session of a new message: its context, or one derived from its messageId."""
    if not context_id:
        return f"a2a-{_digest(message_id)}"
    if not _CONTEXT.fullmatch(context_id):
        raise InvalidParamsError(
            f"a contextId must match [A-Za-z0-9._-]{{1,{MAX_CONTEXT}}}",
            data={"code": "validation_error"},
        )
    return context_id


def turn_id_for(session_id: str, message_id: str) -> str:
    return f"{session_id}.{_digest(message_id)}"


def session_of(task_id: str) -> str | None:
    """The session a task id names, or None for an id no A2A message gave a turn."""
    found = _TASK.fullmatch(task_id)
    return found.group("sid") if found else None


# -- cards ----------------------------------------------------------------------------

_BEARER = {
    "bearer": SecurityScheme(
        http_auth_security_scheme=HTTPAuthSecurityScheme(
            scheme="bearer", description="a turnkeep API token: its tenant scopes every task"
        )
    )
}
_MODES = ["text/plain", "application/json"]


def _skill(base: str, agent: AgentDefinition) -> AgentSkill:
    return AgentSkill(
        id=agent.name,
        name=agent.name,
        description=(
            f"The turnkeep agent {agent.name!r}, version {agent.version}; its card: "
            f"{base}/a2a/{agent.name}/.well-known/agent-card.json"
        ),
        tags=["turnkeep", *(t.name for t in agent.tools)],
    )


def _card(base: str, path: str, **fields: Any) -> AgentCard:
    return AgentCard(
        supported_interfaces=[
            AgentInterface(
                url=f"{base}{path}",
                protocol_binding=TransportProtocol.JSONRPC.value,
                protocol_version=PROTOCOL_VERSION_1_0,
            )
        ],
        capabilities=AgentCapabilities(streaming=True, push_notifications=False),
        security_schemes=_BEARER,
        security_requirements=[SecurityRequirement(schemes={"bearer": StringList()})],
        default_input_modes=_MODES,
        default_output_modes=_MODES,
        **fields,
    )


def agent_card(base: str, agent: AgentDefinition) -> AgentCard:
    return _card(
        base,
        f"/a2a/{agent.name}",
        name=agent.name,
        version=agent.version,
        description=f"The turnkeep agent {agent.name!r}: a task is a durable turn, "
        "a context a session; a message on an input-required task answers it.",
        skills=[_skill(base, agent)],
    )


def root_card(base: str, agents: list[AgentDefinition]) -> AgentCard:
    return _card(
        base,
        "/a2a",
        name="turnkeep",
        version="1",
        description="Every turnkeep agent, one skill each. Each is an A2A agent at "
        "/a2a/{skill id} with its own card; here a new conversation names its agent "
        "in the message metadata: {'skill': id}.",
        skills=[_skill(base, a) for a in agents],
    )


# -- turns as tasks -----------------------------------------------------------------------


def _open(turn: TurnRecord) -> dict[str, Any] | None:
    """The request a parked turn waits on, unanswered; else None."""
    pending = turn.pending_input
    if turn.state in PARKED_STATES and pending and not pending.get("resolved"):
        return pending
    return None


def task_state(turn: TurnRecord) -> TaskState:
    if turn.state in PARKED_STATES and _open(turn) is None:
        return TaskState.TASK_STATE_WORKING  # answered: a worker moves it on
    return _STATES[turn.state]


def _message(task_id: str, context_id: str, message_id: str, parts: list[Part]) -> Message:
    return Message(
        message_id=message_id,
        context_id=context_id,
        task_id=task_id,
        role=Role.ROLE_AGENT,
        parts=parts,
    )


def _request_message(task_id: str, context_id: str, pending: dict[str, Any]) -> Message:
    tool = pending.get("tool") or {}
    about = f" for {tool['name']}" if tool.get("name") else ""
    text = (
        f"{pending.get('kind')} requested{about}: answer with a message on this task "
        "whose data part matches response_schema"
    )
    view = pending_view(pending) or {}
    parts = [Part(text=text), new_data_part(view, media_type="application/json")]
    return _message(task_id, context_id, f"{task_id}:{pending.get('request_id')}", parts)


def _result_parts(result: dict[str, Any]) -> list[Part]:
    parts = [Part(text=str(result.get("text", "")))]
    if "output" in result:
        parts.append(new_data_part(result["output"], media_type="application/json"))
    return parts


def _error_text(error: dict[str, Any] | None) -> str:
    error = error or {}
    return f"{error.get('code', 'failed')}: {error.get('message', '')}"


def _status(state: TaskState, at: datetime, message: Message | None) -> TaskStatus:
    status = TaskStatus(state=state, timestamp=at)
    if message is not None:
        status.message.CopyFrom(message)
    return status


def task_of(turn: TurnRecord) -> Task:
    """The task a turn is, read from its row (the journal's summary)."""
    tid, sid = turn.turn_id, turn.session_id
    state = task_state(turn)
    pending = _open(turn)
    message: Message | None = None
    if pending is not None:
        message = _request_message(tid, sid, pending)
    elif turn.state is TurnState.COMPLETED and turn.result is not None:
        message = _message(tid, sid, f"{tid}:result", _result_parts(turn.result))
    elif turn.state is TurnState.FAILED:
        message = _message(tid, sid, f"{tid}:error", [Part(text=_error_text(turn.error))])
    task = Task(id=tid, context_id=sid, status=_status(state, turn.updated_at, message))
    for i, m in enumerate(turn.input.get("messages") or ()):
        if m.get("role") == "user":
            part = Part(text=str(m.get("content", "")))
            task.history.append(
                Message(
                    message_id=f"{tid}:input:{i}",
                    context_id=sid,
                    task_id=tid,
                    role=Role.ROLE_USER,
                    parts=[part],
                )
            )
    if turn.state is TurnState.COMPLETED and turn.result is not None:
        task.artifacts.append(
            Artifact(artifact_id=f"{tid}:result", name="result", parts=_result_parts(turn.result))
        )
    meta = {
        "agent": turn.agent_name,
        "state": turn.state.value,
        "attempt": turn.attempt,
        "cancel_requested": turn.cancel_requested,
        "pending_input": pending_view(pending),
        "error": turn.error,
    }
    task.metadata.update({"turnkeep": meta})
    return task


def stream_events(event: EventRecord) -> list[Event]:
    """What one committed journal event of a turn is on an A2A stream."""
    tid, sid, kind = event.turn_id, event.session_id, event.type
    where = {"event": kind, "seq": event.seq, "step": event.step}
    out: list[Event] = []
    message: Message | None = None
    state = TaskState.TASK_STATE_WORKING
    if kind == EventType.TURN_ACCEPTED:
        state = TaskState.TASK_STATE_SUBMITTED
    elif kind == EventType.MODEL_COMPLETED:
        content = (event.data.get("message") or {}).get("content")
        if content:
            message = _message(tid, sid, f"{tid}:{event.seq}", [Part(text=str(content))])
    elif kind == EventType.INPUT_REQUESTED:
        state = TaskState.TASK_STATE_INPUT_REQUIRED
        message = _request_message(tid, sid, event.data)
        where["pending_input"] = pending_view(event.data)
    elif kind == EventType.TURN_NEEDS_RECONCILIATION:
        state = TaskState.TASK_STATE_INPUT_REQUIRED
    elif kind == EventType.TURN_COMPLETED:
        parts = _result_parts(event.data.get("result") or {})
        artifact = Artifact(artifact_id=f"{tid}:result", name="result", parts=parts)
        out.append(
            TaskArtifactUpdateEvent(task_id=tid, context_id=sid, artifact=artifact, last_chunk=True)
        )
        state = TaskState.TASK_STATE_COMPLETED
        message = _message(tid, sid, f"{tid}:result", parts)
    elif kind == EventType.TURN_FAILED:
        state = TaskState.TASK_STATE_FAILED
        message = _message(tid, sid, f"{tid}:error", [Part(text=_error_text(event.data["error"]))])
        where["error"] = event.data.get("error")
    elif kind == EventType.TURN_CANCELLED:
        state = TaskState.TASK_STATE_CANCELED
    status = _status(state, event.created_at, message)
    update = TaskStatusUpdateEvent(task_id=tid, context_id=sid, status=status)
    update.metadata.update({"turnkeep": where})
    out.append(update)
    return out


def _settled(turn: TurnRecord) -> bool:
    """Ended, or waiting on someone: nothing moves it until someone acts."""
    return turn.state.terminal or _open(turn) is not None


# -- what a message says --------------------------------------------------------------------


def _plain(value: Any) -> Any:
    """JSON as sent: protobuf's Value holds every number as a double (4 -> 4.0)."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _data(part: Part) -> Any:
    return _plain(MessageToDict(part.data))


def _check_parts(message: Message) -> None:
    if message.role != Role.ROLE_USER:
        raise InvalidParamsError("a message to an agent has the user role")
    if any(p.HasField("raw") or p.HasField("url") for p in message.parts):
        raise ContentTypeNotSupportedError("only text and data parts are accepted")


def text_of(message: Message) -> str:
    """A turn's input: the text parts, and each data part as canonical JSON."""
    _check_parts(message)
    texts = [
        p.text if p.HasField("text") else canonical_json(_data(p))
        for p in message.parts
        if p.HasField("text") or p.HasField("data")
    ]
    text = "\n".join(t for t in texts if t)
    if not text:
        raise InvalidParamsError("a message needs a text or data part")
    return text


def answer_of(message: Message) -> dict[str, Any]:
    """The answer a message on an input-required task gives: a data part, or JSON text."""
    _check_parts(message)
    data = [_data(p) for p in message.parts if p.HasField("data")]
    if data:
        value = data[0]
    else:
        try:
            value = json.loads("\n".join(p.text for p in message.parts if p.HasField("text")))
        except ValueError:
            value = None
    if not isinstance(value, dict):
        raise InvalidParamsError(
            "an answer is a data part (or JSON text) with an object matching the "
            "request's response_schema",
            data={"code": "validation_error"},
        )
    return value


def _metadata(message: Message) -> dict[str, Any]:
    return MessageToDict(message.metadata) if message.HasField("metadata") else {}


# -- errors at the edge ------------------------------------------------------------------


def _from_store(exc: StoreError) -> A2AError:
    if isinstance(exc, NotFound):
        return TaskNotFoundError()
    if isinstance(exc, TurnNotActive):
        return TaskNotCancelableError("the task has already ended")
    if isinstance(exc, AnswerInvalid):
        errors = [{"field": exc.where, "message": exc.message}]
        return InvalidParamsError(str(exc), data={"code": exc.code, "errors": errors})
    problem = problems.from_store_error(exc)
    data = {"code": problem.code}
    if problem.status == 403:
        return InvalidRequestError(problem.detail, data=data)
    if problem.status >= 500:
        return InternalError(problem.detail, data=data)
    return InvalidParamsError(problem.detail, data=data)


@contextmanager
def _edge() -> Iterator[None]:
    """turnkeep's typed errors as A2A errors (which pass as they are). Never the
    input nor another tenant's data in a message: they are the HTTP problems' texts."""
    try:
        yield
    except A2AError:
        raise
    except StoreError as exc:
        raise _from_store(exc) from exc
    except UnknownAgent as exc:
        raise InvalidParamsError(
            "no agent of that name is declared", data={"code": "unknown_agent"}
        ) from exc
    except ValidationError as exc:
        fields = sorted({".".join(str(p) for p in e["loc"]) for e in exc.errors()})
        raise InvalidParamsError(
            "invalid field(s): " + ", ".join(fields), data={"code": "validation_error"}
        ) from exc
    except (redis.RedisError, TimeoutError) as exc:
        raise InternalError("redis is unavailable", data={"code": "unavailable"}) from exc
    except Exception as exc:
        log.error("a2a: unhandled error: %s", type(exc).__name__)
        raise InternalError("internal error", data={"code": "internal"}) from exc


# -- one call ------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Started:
    """A turn a message moved (admitted or answered) and the journal seq to follow from."""

    turn: TurnRecord
    after: int


@dataclass(frozen=True)
class _Call:
    """One JSON-RPC call: the process's services, the caller, the endpoint's agent."""

    services: Services
    principal: Principal
    #: the agent of ``/a2a/{agent}``; None at the root endpoint (``/a2a``)
    agent: str | None

    @classmethod
    def of(cls, context: ServerCallContext) -> _Call:
        state = context.state
        return cls(state["services"], state["principal"], state.get("agent"))

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(services, principal, *args)`` of the submit path, on a blocking thread."""
        return await self.services.run(fn, self.services, self.principal, *args)

    async def turn(self, task_id: str) -> TurnRecord:
        sid = session_of(task_id)
        if sid is None:
            raise TaskNotFoundError()
        return self._mine(await self.run(submit.read, sid, task_id))

    def _mine(self, turn: TurnRecord) -> TurnRecord:
        if self.agent is not None and turn.agent_name != self.agent:
            raise TaskNotFoundError()
        return turn

    async def snapshot(self, session_id: str, task_id: str) -> tuple[int, TurnRecord]:
        """The session's head seq, then the turn: what the turn is, and from where on
        the journal has what happened since (an event between the two reads is in
        both: a stream repeats one status, never misses one)."""
        store, tenant = self.services.store, self.principal.tenant
        head = (await self.services.run(store.get_session, tenant, session_id)).head_seq
        return head, self._mine(await self.run(submit.read, session_id, task_id))

    async def send(self, message: Message) -> _Started:
        if message.task_id:
            return await self._answer(message)
        sid = session_for(message.context_id, message.message_id)
        body = TurnRequest.model_validate(
            {
                "agent": await self._agent_for(message, sid),
                "input": [{"role": "user", "content": text_of(message)}],
            }
        )
        tid = turn_id_for(sid, message.message_id)
        admission = await self.run(partial(submit.admit, surface="a2a"), sid, tid, body)
        await self.services.run(submit.after_admission, self.services, admission)
        if admission.event is not None:
            return _Started(admission.turn, admission.event.seq)
        head, turn = await self.snapshot(sid, tid)  # a replay: the turn as it is now
        return _Started(turn, head)

    async def _agent_for(self, message: Message, session_id: str) -> str:
        named = _metadata(message).get("skill")
        if self.agent is not None:
            if named not in (None, self.agent):
                raise InvalidParamsError("metadata.skill names another agent than this one")
            return self.agent
        if isinstance(named, str) and named:
            return named
        if message.context_id:
            store = self.services.store
            try:
                session = await self.services.run(
                    store.get_session, self.principal.tenant, session_id
                )
            except NotFound:
                pass
            else:
                return session.agent_name
        raise InvalidParamsError("name the agent: message metadata {'skill': <a skill id>}")

    async def _answer(self, message: Message) -> _Started:
        turn = await self.turn(message.task_id)
        if message.context_id and message.context_id != turn.session_id:
            raise InvalidParamsError("the contextId is not the task's")
        if turn.state.terminal:
            raise UnsupportedOperationError(
                "the task has ended: a message without taskId starts a new one"
            )
        pending = _open(turn)
        if pending is None:
            raise InvalidParamsError(
                "the task is not waiting for input", data={"code": "input_not_open"}
            )
        rid = str(pending["request_id"])
        if _metadata(message).get("request_id", rid) != rid:
            raise InvalidParamsError(
                "the task waits on another request", data={"code": "input_not_open"}
            )
        body = answer_of(message)
        answered = await self.run(submit.answer, turn.session_id, turn.turn_id, rid, body)
        await self.services.run(submit.after_answer, self.services, answered)
        return _Started(answered.turn, answered.event.seq)

    async def settle(self, started: _Started, seconds: float) -> TurnRecord:
        """The turn once it ended or waits on someone, or as it is after ``seconds``."""
        turn = started.turn
        if _settled(turn):
            return turn
        with anyio.move_on_after(seconds):
            async for _ in self.events(turn, started.after):
                pass
        return self._mine(await self.run(submit.read, turn.session_id, turn.turn_id))

    async def events(self, turn: TurnRecord, after: int) -> AsyncGenerator[Event, None]:
        """The turn's stream events from the journal after seq ``after``, up to and
        including the next one after which it ends or waits on someone."""
        tid = turn.turn_id

        def settles(event: EventRecord) -> bool:
            return event.turn_id == tid and event.type in _SETTLES

        follow = submit.follow(
            self.services, self.principal, turn.session_id, after=after, until=settles
        )
        try:
            with _edge():
                async for event in follow:
                    if isinstance(event, EventRecord) and event.turn_id == tid:
                        for out in stream_events(event):
                            yield out
        finally:
            await follow.aclose()


# -- the request handler -----------------------------------------------------------------


class TurnkeepRequestHandler(RequestHandler):
    """A2A's request handler over the submit path: the journal is the task store."""

    @validate_request_params
    async def on_get_task(self, params: GetTaskRequest, context: ServerCallContext) -> Task:
        validate_history_length(params)
        with _edge():
            turn = await _Call.of(context).turn(params.id)
            return apply_history_length(task_of(turn), params)

    @validate_request_params
    async def on_list_tasks(
        self, params: ListTasksRequest, context: ServerCallContext
    ) -> ListTasksResponse:
        """The tasks of one context (``contextId`` is required), newest first."""
        validate_history_length(params)
        size = params.page_size if params.HasField("page_size") else 50
        validate_page_size(size)
        if not params.context_id:
            raise InvalidParamsError("contextId is required: tasks are listed per context")
        call = _Call.of(context)
        with _edge():
            # (none for another owner's project session, as for a missing one)
            turns = await call.run(submit.turns_of, params.context_id)
            tasks = [
                task_of(t)
                for t in reversed(turns)
                if session_of(t.turn_id) == t.session_id and call.agent in (None, t.agent_name)
            ]
        if params.status:
            tasks = [t for t in tasks if t.status.state == params.status]
        start = int(params.page_token) if params.page_token.isdigit() else 0
        page = [apply_history_length(t, params) for t in tasks[start : start + size]]
        if not params.include_artifacts:
            for task in page:
                task.ClearField("artifacts")
        rest = start + size < len(tasks)
        return ListTasksResponse(
            tasks=page,
            next_page_token=str(start + size) if rest else "",
            page_size=size,
            total_size=len(tasks),
        )

    @validate_request_params
    async def on_cancel_task(self, params: CancelTaskRequest, context: ServerCallContext) -> Task:
        """Waiting, queued and parked turns are cancelled at once; a running one at its
        worker's next safe point (waited for ``CANCEL_WAIT`` s, then as it is)."""
        call = _Call.of(context)
        with _edge():
            turn = await call.turn(params.id)
            if turn.state.terminal:
                raise TaskNotCancelableError("the task has already ended")
            done = await call.run(submit.cancel, turn.session_id, turn.turn_id)
            await call.services.run(submit.after_cancel, call.services, done)
            turn = done.turn
            if not turn.state.terminal:
                turn = await submit.wait(
                    call.services, call.principal, turn.session_id, turn.turn_id, CANCEL_WAIT
                )
            return task_of(turn)

    @validate_request_params
    async def on_message_send(
        self, params: SendMessageRequest, context: ServerCallContext
    ) -> Task | Message:
        validate_history_length(params.configuration)
        call = _Call.of(context)
        with _edge():
            started = await call.send(params.message)
            turn = started.turn
            if not params.configuration.return_immediately:
                turn = await call.settle(started, call.services.settings.max_wait)
            return apply_history_length(task_of(turn), params.configuration)

    @validate_request_params
    async def on_message_send_stream(
        self, params: SendMessageRequest, context: ServerCallContext
    ) -> AsyncGenerator[Event, None]:
        validate_history_length(params.configuration)
        call = _Call.of(context)
        with _edge():
            started = await call.send(params.message)
            first = apply_history_length(task_of(started.turn), params.configuration)
        yield first
        if not _settled(started.turn):
            async for event in call.events(started.turn, started.after):
                yield event

    @validate_request_params
    async def on_subscribe_to_task(
        self, params: SubscribeToTaskRequest, context: ServerCallContext
    ) -> AsyncGenerator[Event, None]:
        """The task as it is, then its events until it ends or waits on someone anew."""
        call = _Call.of(context)
        sid = session_of(params.id)
        if sid is None:
            raise TaskNotFoundError()
        with _edge():
            head, turn = await call.snapshot(sid, params.id)
            if turn.state.terminal:
                raise UnsupportedOperationError(f"the task has ended ({turn.state.value})")
            first = task_of(turn)
        yield first
        async for event in call.events(turn, head):
            yield event

    async def on_create_task_push_notification_config(
        self, params: TaskPushNotificationConfig, context: ServerCallContext
    ) -> TaskPushNotificationConfig:
        raise PushNotificationNotSupportedError()

    async def on_get_task_push_notification_config(
        self, params: GetTaskPushNotificationConfigRequest, context: ServerCallContext
    ) -> TaskPushNotificationConfig:
        raise PushNotificationNotSupportedError()

    async def on_list_task_push_notification_configs(
        self, params: ListTaskPushNotificationConfigsRequest, context: ServerCallContext
    ) -> ListTaskPushNotificationConfigsResponse:
        raise PushNotificationNotSupportedError()

    async def on_delete_task_push_notification_config(
        self, params: DeleteTaskPushNotificationConfigRequest, context: ServerCallContext
    ) -> None:
        raise PushNotificationNotSupportedError()

    async def on_get_extended_agent_card(
        self, params: GetExtendedAgentCardRequest, context: ServerCallContext
    ) -> AgentCard:
        raise ExtendedAgentCardNotConfiguredError()


# -- routes --------------------------------------------------------------------------------


class _Subject(User):
    def __init__(self, principal: Principal) -> None:
        self.principal = principal

    @property
    def is_authenticated(self) -> bool:
        return True

    @property
    def user_name(self) -> str:
        return self.principal.subject


class _Context(ServerCallContextBuilder):
    """The call's principal (set by ``Authenticate``), services and endpoint agent.
    Of the headers only the protocol version is kept (never the Authorization)."""

    def build(self, request: Request) -> ServerCallContext:
        principal = principal_of(request)
        version = request.headers.get(VERSION_HEADER)
        return ServerCallContext(
            user=_Subject(principal),
            state={
                "principal": principal,
                "services": services_of(request),
                "agent": request.path_params.get("agent"),
                "headers": {VERSION_HEADER: version} if version else {},
            },
        )


def _base(request: Request) -> str:
    return str(request.base_url).rstrip("/")


def _unknown_agent() -> Response:
    return problems.Problem(404, "not_found", "no agent of that name is declared").response()


async def _agent_card(request: Request) -> Response:
    try:
        agent = services_of(request).registry.get(request.path_params["agent"])
    except UnknownAgent:
        return _unknown_agent()
    return JSONResponse(agent_card_to_dict(agent_card(_base(request), agent)))


async def _root_card(request: Request) -> Response:
    registry = services_of(request).registry
    agents = [registry.get(n) for n in registry.names()]
    return JSONResponse(agent_card_to_dict(root_card(_base(request), agents)))


_handler = TurnkeepRequestHandler()
[_agent_route] = create_jsonrpc_routes(_handler, "/a2a/{agent}", context_builder=_Context())
[_root_route] = create_jsonrpc_routes(_handler, "/a2a", context_builder=_Context())


async def _agent_rpc(request: Request) -> Response:
    if request.path_params["agent"] not in services_of(request).registry.names():
        return _unknown_agent()
    response: Response = await _agent_route.endpoint(request)
    return response


router = APIRouter(
    routes=[
        Route(ROOT_CARD, _root_card, methods=["GET"]),
        Route("/a2a" + ROOT_CARD, _root_card, methods=["GET"]),
        Route("/a2a/{agent}/.well-known/agent-card.json", _agent_card, methods=["GET"]),
        Route("/a2a/{agent}", _agent_rpc, methods=["POST"]),
        _root_route,
    ]
)
