"""MCP over Streamable HTTP at ``/mcp``: every agent of the registry is an MCP tool.

The official SDK (``mcp``) speaks the protocol; this module only translates onto the
service (api/service/), like every other surface: ``McpSurface`` owns the SDK's server
and session manager, which the app mounts and runs in its lifespan; each handler reads
the caller's ``Principal`` off the HTTP request; ``tools/call`` admits, follows and
answers a turn; cancellation and errors translate here. The protocol as turnkeep
speaks it (auth, arguments, ids, progress, cancellation, errors) is docs/mcp.md.
"""

from __future__ import annotations

import contextlib
import logging
from functools import partial
from typing import Any

import anyio
import mcp_types as types
import redis
from fastapi import FastAPI
from mcp.server import Server, ServerRequestContext
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.streamable_http import MCP_SESSION_ID_HEADER
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.shared.exceptions import MCPError
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaMode, JsonSchemaValue
from pydantic_core import CoreSchema, PydanticUndefined, core_schema
from starlette.requests import HTTPConnection, Request
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from turnkeep.api import problems
from turnkeep.api.auth import Principal, principal_of
from turnkeep.api.errors import RedisUnavailable, RequestInvalid, ServiceError
from turnkeep.api.resources import ApiResources, services_of
from turnkeep.api.service import admission, answers, cancel, follow, ids, reads
from turnkeep.api.service.answers import OneAnswer
from turnkeep.api.service.defaults import defaults_for
from turnkeep.api.service.requests import ID_REGEX, Budget, InputMessage, TurnRequest
from turnkeep.api.service.wire import turn_json
from turnkeep.runtime.agents.definition import AgentDefinition
from turnkeep.runtime.errors import TurnkeepError
from turnkeep.runtime.hashing import sha256_hex
from turnkeep.runtime.states import EventType, TurnState
from turnkeep.store.errors import StoreError, TurnNotActive
from turnkeep.store.records import EventRecord, TurnRecord

log = logging.getLogger(__name__)

PATH = "/mcp"
STATUS_TOOL = "turnkeep_status"
CANCEL_TOOL = "turnkeep_cancel"
ANSWER_TOOL = "turnkeep_answer"
#: seconds a cancellation the client asked for may take to record
CANCEL_BOUND = 5.0

_TERMINAL_EVENTS = frozenset(
    {EventType.TURN_COMPLETED, EventType.TURN_FAILED, EventType.TURN_CANCELLED}
)


class _ToolInput(GenerateJsonSchema):
    """A tool's input schema from its arguments' model, as MCP clients read it: an
    optional argument (``X | None = None``) is one that may be left out, so its schema
    is X's (no ``null`` branch, no ``default: null``); and the models it nests are
    written in place (no ``$defs``/``$ref``)."""

    def default_schema(self, schema: core_schema.WithDefaultSchema) -> JsonSchemaValue:
        inner = schema["schema"]
        if schema.get("default", PydanticUndefined) is None and inner["type"] == "nullable":
            return self.generate_inner(inner["schema"])
        return super().default_schema(schema)

    def generate(self, schema: CoreSchema, mode: JsonSchemaMode = "validation") -> JsonSchemaValue:
        found = super().generate(schema, mode)
        defs = found.pop("$defs", {})
        inlined: JsonSchemaValue = _inline(found, defs)
        return inlined


def _inline(value: Any, defs: dict[str, Any]) -> Any:
    """``value`` with every ``{"$ref": "#/$defs/X", ...}`` replaced by X's schema (its
    siblings, a field's description, win); the models here nest without recursion."""
    if isinstance(value, list):
        return [_inline(v, defs) for v in value]
    if not isinstance(value, dict):
        return value
    ref = value.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        siblings = {k: v for k, v in value.items() if k != "$ref"}
        return _inline({**defs[ref.removeprefix("#/$defs/")], **siblings}, defs)
    return {k: _inline(v, defs) for k, v in value.items()}


def input_schema(model: type[BaseModel]) -> dict[str, Any]:
    """A tool's ``inputSchema``: the JSON Schema of the model its arguments validate
    with (``model_json_schema``), so the two cannot drift apart."""
    return model.model_json_schema(schema_generator=_ToolInput)


class AnswerArguments(BaseModel):
    """Answers to open requests of a turn's wait, all or none."""

    model_config = ConfigDict(extra="forbid")

    session_id: str = Field(pattern=ID_REGEX)
    turn_id: str = Field(pattern=ID_REGEX)
    answers: list[OneAnswer] = Field(
        min_length=1,
        max_length=64,
        description="One per open request of the turn (its pending_inputs): the "
        "response as the request's response_schema says.",
    )


class TurnArguments(BaseModel):
    """A turn of the agent: the HTTP turn body's fields, with the agent as the tool."""

    model_config = ConfigDict(extra="forbid")

    prompt: str | None = Field(
        default=None, min_length=1, description="The user's message (or give `messages`)."
    )
    messages: list[InputMessage] | None = Field(
        default=None,
        min_length=1,
        max_length=100,
        description="The turn's input messages (or give `prompt`).",
    )
    session_id: str | None = Field(
        default=None,
        pattern=ID_REGEX,
        description="The session (conversation) of the turn; default: one per MCP "
        "session and agent.",
    )
    idempotency_key: str | None = Field(
        default=None,
        pattern=ID_REGEX,
        description="The turn id: the same key in the same session answers the same "
        "turn; reused with other input it is refused (idempotency_conflict).",
    )
    output_schema: dict[str, Any] | None = Field(
        default=None,
        description="A JSON Schema the final answer must match (default: the agent's).",
    )
    budget: Budget | None = Field(
        default=None,
        description="Bounds of this turn; each may only lower the agent's limits.",
    )

    @model_validator(mode="after")
    def _one_input(self) -> TurnArguments:
        if (self.prompt is None) == (self.messages is None):
            raise ValueError("give either prompt or messages")
        return self

    def turn_request(self, agent: str) -> TurnRequest:
        """The HTTP body these arguments stand for (validates the output schema)."""
        messages = self.messages or [InputMessage(role="user", content=self.prompt or "")]
        return TurnRequest(
            agent=agent, input=messages, output_schema=self.output_schema, budget=self.budget
        )


class TurnRef(BaseModel):
    """A turn, by its session and its id."""

    model_config = ConfigDict(extra="forbid")

    session_id: str = Field(pattern=ID_REGEX)
    turn_id: str = Field(pattern=ID_REGEX)


#: the tools' input schemas, derived from the models their arguments validate with: an
#: agent's tool, the status and cancel tools, the answer tool
TURN_INPUT_SCHEMA = input_schema(TurnArguments)
TURN_REF_SCHEMA = input_schema(TurnRef)
ANSWER_SCHEMA = input_schema(AnswerArguments)


# -- the surface -----------------------------------------------------------------------


class McpSurface:
    """The SDK server and its session manager, one per app (the manager runs once)."""

    def __init__(self) -> None:
        self.server: Server[Any] = Server(
            "turnkeep",
            version="1",
            instructions="Each tool runs one durable turn of the agent it names and "
            "answers with the turn's result; pass idempotency_key to retry safely.",
            on_list_tools=list_tools,
            on_call_tool=call_tool,
            # the 2026 wire checks Mcp-Param headers against it (else lists every tool)
            get_tool_input_schema=_input_schema,
        )
        self.manager = StreamableHTTPSessionManager(app=self.server)

    def mount(self, app: FastAPI) -> None:
        """Serve ``/mcp`` (every method: POST, the GET stream, DELETE) on ``app``."""
        app.router.routes.append(Route(PATH, endpoint=_Endpoint(self.manager)))

    def running(self) -> contextlib.AbstractAsyncContextManager[None]:
        """The manager's task group: enter it in the app's lifespan."""
        return self.manager.run()


class _Endpoint:
    """ASGI: binds the request to its principal for the SDK's session ownership check
    (``Authenticate`` ran before), then hands it to the session manager."""

    def __init__(self, manager: StreamableHTTPSessionManager) -> None:
        self.manager = manager

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        principal = principal_of(HTTPConnection(scope))
        # the token itself is not kept: the SDK compares (client_id, issuer, subject)
        token = AccessToken(
            token="", client_id=principal.tenant, subject=principal.subject, scopes=[]
        )
        scope["user"] = AuthenticatedUser(token)
        await self.manager.handle_request(scope, receive, send)


def _caller(ctx: ServerRequestContext[Any, Any]) -> tuple[Request, Principal, ApiResources]:
    request = ctx.request
    if not isinstance(request, Request):
        raise MCPError(code=types.INTERNAL_ERROR, message="served over HTTP only")
    return request, principal_of(request), services_of(request)


# -- tools/list --------------------------------------------------------------------------


def agent_tool(agent: AgentDefinition) -> types.Tool:
    """The version a call runs (the tenant's default: defaults_for), named in _meta."""
    meta = {"turnkeep/version": agent.version, "turnkeep/definition_hash": agent.definition_hash}
    return types.Tool(
        name=agent.name, description=agent.instructions, input_schema=TURN_INPUT_SCHEMA, _meta=meta
    )


_BUILTIN_TOOLS = (
    types.Tool(
        name=STATUS_TOOL,
        description="A turn's state and, once it ended, its result or typed error.",
        input_schema=TURN_REF_SCHEMA,
    ),
    types.Tool(
        name=CANCEL_TOOL,
        description="Cancel a turn: at once when no worker is stepping it, else at its "
        "next safe point.",
        input_schema=TURN_REF_SCHEMA,
    ),
    types.Tool(
        name=ANSWER_TOOL,
        description="Answer open input requests of a turn (its pending_inputs: the "
        "approvals of one model answer are asked together), all or none.",
        input_schema=ANSWER_SCHEMA,
    ),
)


def _input_schema(name: str) -> dict[str, Any]:
    if name == ANSWER_TOOL:
        return ANSWER_SCHEMA
    return TURN_REF_SCHEMA if name in (STATUS_TOOL, CANCEL_TOOL) else TURN_INPUT_SCHEMA


async def list_tools(
    ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
) -> types.ListToolsResult:
    _, principal, services = _caller(ctx)
    agents = await services.run(defaults_for, services, principal.tenant)
    tools = [agent_tool(a) for a in agents.values()]
    tools += [t for t in _BUILTIN_TOOLS if t.name not in agents]
    return types.ListToolsResult(tools=tools)


# -- tools/call --------------------------------------------------------------------------


async def call_tool(
    ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
) -> types.CallToolResult:
    request, principal, services = _caller(ctx)
    arguments = params.arguments or {}
    name = params.name
    try:
        if name in services.agent_hashes:  # the registry's agents, by name
            args = TurnArguments.model_validate(arguments)
            body = args.turn_request(name)
            sid = call_session_id(args, request, name)
            tid = call_turn_id(args, request, ctx.request_id)
            return await _run_turn(ctx, services, principal, sid, tid, body)
        if name in (STATUS_TOOL, CANCEL_TOOL):
            ref = TurnRef.model_validate(arguments)
            if name == CANCEL_TOOL:
                return await _cancel(services, principal, ref)
            turn = await services.run(reads.read, services, principal, ref.session_id, ref.turn_id)
            return _turn_result(turn, call=False)
        if name == ANSWER_TOOL:
            given = AnswerArguments.model_validate(arguments)
            pairs = [(a.request_id, a.response) for a in given.answers]
            done = await services.run(
                answers.answer_many, services, principal, given.session_id, given.turn_id, pairs
            )
            await services.run(answers.after_answer, services, done)
            return _turn_result(done.turn, call=False)
    except ValidationError as exc:
        return _invalid(exc)
    except (StoreError, ServiceError) as exc:
        return _refused(exc)
    except redis.RedisError as exc:
        log.warning("redis unavailable: %s", type(exc).__name__)
        return _refused(RedisUnavailable())
    raise MCPError(code=types.INVALID_PARAMS, message="no tool of that name")


def call_session_id(args: TurnArguments, request: Request, agent: str) -> str:
    """The caller's ``session_id``, else one per MCP session and agent."""
    if args.session_id is not None:
        return args.session_id
    mcp_session = request.headers.get(MCP_SESSION_ID_HEADER)
    if mcp_session is None:
        return "mcp-" + ids.turn_id(None)
    return "mcp-" + sha256_hex({"mcp_session": mcp_session, "agent": agent})[:32]


def call_turn_id(args: TurnArguments, request: Request, request_id: types.RequestId | None) -> str:
    """The caller's ``idempotency_key``, else one derived from the MCP session and the
    JSON-RPC request id (stable for a redelivered request), else a new one."""
    if args.idempotency_key is not None:
        return args.idempotency_key
    mcp_session = request.headers.get(MCP_SESSION_ID_HEADER)
    if mcp_session is None or request_id is None:
        return ids.turn_id(None)
    return "mcp-" + sha256_hex({"mcp_session": mcp_session, "request_id": request_id})[:32]


async def _run_turn(
    ctx: ServerRequestContext[Any, Any],
    services: ApiResources,
    principal: Principal,
    sid: str,
    tid: str,
    body: TurnRequest,
) -> types.CallToolResult:
    try:
        # shielded: once the admission is sent, this call knows whether it committed
        with anyio.CancelScope(shield=True):
            admitted = await services.run(
                partial(admission.admit, surface="mcp"), services, principal, sid, tid, body
            )
            try:
                await services.run(admission.after_admission, services, admitted)
            except Exception as exc:
                # admitted all the same: the recovery scan enqueues a lost session
                log.warning("after admission (MCP): %s", type(exc).__name__)
        turn = await _settled(ctx, services, principal, admitted.turn)
    except anyio.get_cancelled_exc_class():
        if _peer_cancelled(ctx):
            await _cancel_abandoned(services, principal, sid, tid)
        raise
    return _turn_result(turn)


async def _settled(
    ctx: ServerRequestContext[Any, Any],
    services: ApiResources,
    principal: Principal,
    turn: TurnRecord,
) -> TurnRecord:
    """The turn once terminal; a progress notification per committed event of it."""
    if turn.state.terminal:
        return turn
    sid, tid = turn.session_id, turn.turn_id

    def ends(event: EventRecord) -> bool:
        return event.turn_id == tid and event.type in _TERMINAL_EVENTS

    # follow is an async generator: closed here, not whenever it is collected
    events = follow.follow(services, principal, sid, after=turn.accepted_seq - 1, until=ends)
    async with contextlib.aclosing(events):
        async for event in events:
            if isinstance(event, EventRecord) and event.turn_id == tid:
                await ctx.session.report_progress(float(event.seq), None, event.type)
    while not turn.state.terminal:
        turn = await reads.wait(services, principal, sid, tid, services.settings.bounds.max_wait)
    return turn


def _peer_cancelled(ctx: ServerRequestContext[Any, Any]) -> bool:
    """Whether the client sent ``notifications/cancelled`` for this request. Going away
    and the server's shutdown cancel the handler too, and must not cancel the turn.

    mcp 2.3 sets the dispatch context's ``cancel_requested`` before it cancels the
    handler, but ``ServerRequestContext`` does not expose it (the SDK's ``Context``
    does; its runner does not build one yet), so it is read off the session's request
    channel. Should an SDK release move it, this answers False: the turn runs on and
    ``turnkeep_cancel`` still cancels it (tests/integration/test_mcp.py notices)."""
    channel = getattr(ctx.session, "_request_outbound", None)
    event = getattr(channel, "cancel_requested", None)
    return isinstance(event, anyio.Event) and event.is_set()


async def _cancel_abandoned(
    services: ApiResources, principal: Principal, sid: str, tid: str
) -> None:
    """Cancel the turn of a call its client cancelled. Never raises: the handler is
    being cancelled, and a turn that ended meanwhile needs nothing."""
    with anyio.move_on_after(CANCEL_BOUND, shield=True):
        try:
            done = await services.run(cancel.cancel, services, principal, sid, tid)
            await services.run(cancel.after_cancel, services, done)
        except TurnNotActive:
            pass  # it ended first
        except Exception as exc:
            log.warning("cancel after notifications/cancelled: %s", type(exc).__name__)


async def _cancel(
    services: ApiResources, principal: Principal, ref: TurnRef
) -> types.CallToolResult:
    done = await services.run(cancel.cancel, services, principal, ref.session_id, ref.turn_id)
    try:
        await services.run(cancel.after_cancel, services, done)
    except Exception as exc:
        log.warning("after cancel (MCP): %s", type(exc).__name__)
    return _turn_result(done.turn, call=False)


# -- results -------------------------------------------------------------------------------


def _summary(turn: TurnRecord) -> tuple[str, bool]:
    """A turn's text and whether it ended without an answer: its answer once completed,
    its typed error once failed or cancelled, its state while active."""
    if turn.state is TurnState.COMPLETED:
        return str((turn.result or {}).get("text", "")), False
    if turn.state is TurnState.FAILED:
        error = turn.error or {}
        return f"{error.get('code', 'failed')}: {error.get('message', '')}", True
    if turn.state is TurnState.CANCELLED:
        return "cancelled: the turn was cancelled", True
    waiting = (
        turn.pending_input.open_requests() if turn.awaiting_input and turn.pending_input else []
    )
    if waiting:
        ids = ", ".join(r.request_id for r in waiting)
        return f"turn {turn.state.value} on {len(waiting)} request(s): {ids}", False
    return f"turn {turn.state.value}", False


def _turn_result(turn: TurnRecord, *, call: bool = True) -> types.CallToolResult:
    """A turn as a tool result, the turn's JSON as structured content. A failed or
    cancelled turn is a tool error when it answers an agent's call (``call``); the
    status and cancel tools succeed in saying so."""
    text, ended_badly = _summary(turn)
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)],
        structured_content=turn_json(turn),
        is_error=call and ended_badly,
    )


def _error(code: str, message: str) -> types.CallToolResult:
    """An error at the edge (no turn to show): the code first, as in a failed turn."""
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=f"{code}: {message}")],
        structured_content={"error": {"code": code, "message": message}},
        is_error=True,
    )


def _refused(exc: TurnkeepError) -> types.CallToolResult:
    """An error of the tree as a tool error: the code and text HTTP answers it with."""
    problem = problems.answer_off_http(exc)
    return _error(problem.code, problem.detail)


def _invalid(exc: ValidationError) -> types.CallToolResult:
    """Which arguments are wrong and why; never the arguments themselves."""
    reasons = [
        f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}" for e in exc.errors()
    ]
    return _error(RequestInvalid.code, "invalid argument(s): " + "; ".join(reasons))
