"""``turnkeep acp --agent NAME``: the Agent Client Protocol over stdio, so an editor
drives turnkeep sessions. A thin translation onto the HTTP API, through
``turnkeep.client.AsyncClient`` (``TURNKEEP_URL``, ``TURNKEEP_TOKEN``); stdout carries
the protocol only, logs go to stderr.

What each method does, how a turn's events become session updates and stop reasons,
how input requests become permission requests, and how a retried prompt reaches the
same turn: docs/acp.md.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import re
import sys
import uuid
from dataclasses import dataclass, field
from importlib import metadata
from typing import Any, cast

import acp
from acp import RequestError
from acp.helpers import (
    start_tool_call,
    text_block,
    tool_content,
    update_agent_message_text,
    update_tool_call,
)
from acp.schema import (
    AgentCapabilities,
    AgentMessageChunk,
    AllowedOutcome,
    AudioContentBlock,
    EmbeddedResourceContentBlock,
    ImageContentBlock,
    Implementation,
    InitializeResponse,
    NewSessionResponse,
    PermissionOption,
    PromptCapabilities,
    PromptResponse,
    ResourceContentBlock,
    StopReason,
    TextContentBlock,
    TextResourceContents,
    ToolCallProgress,
    ToolCallStart,
    ToolCallUpdate,
)

from turnkeep.client import ApiError, AsyncClient, Event, Unreachable
from turnkeep.client.settings import ClientSettings

log = logging.getLogger("turnkeep.acp")

#: the ``_meta`` key of ``session/prompt`` that names the turn (the client's prompt id)
IDEMPOTENCY_META = "turnkeep/idempotencyKey"
_ID = re.compile(r"^[A-Za-z0-9._-]{1,128}$")

#: the input request kinds ``session/request_permission`` answers: both take
#: ``{"approved": bool}`` (runtime/inputs.py)
PERMISSION_KINDS = frozenset({"approval", "budget_extension"})
ALLOW, REJECT = "allow", "reject"
OPTIONS = [
    PermissionOption(option_id=ALLOW, name="Allow", kind="allow_once"),
    PermissionOption(option_id=REJECT, name="Reject", kind="reject_once"),
]
#: answers to an input request that mean it is no longer open: nothing to do
_CLOSED = frozenset({"input_not_open", "input_expired", "not_found", "turn_not_active"})

ContentBlock = (
    TextContentBlock
    | ImageContentBlock
    | AudioContentBlock
    | ResourceContentBlock
    | EmbeddedResourceContentBlock
)
Update = AgentMessageChunk | ToolCallStart | ToolCallProgress


def prompt_text(blocks: list[ContentBlock]) -> str:
    """The turn's input: text blocks, resource links and embedded text resources."""
    parts: list[str] = []
    for block in blocks:
        if isinstance(block, TextContentBlock):
            parts.append(block.text)
        elif isinstance(block, ResourceContentBlock):
            parts.append(f"[{block.name}]({block.uri})")
        elif isinstance(block, EmbeddedResourceContentBlock):
            res = block.resource
            if not isinstance(res, TextResourceContents):
                raise RequestError.invalid_params({"prompt": "binary resources are not supported"})
            parts.append(f'<resource uri="{res.uri}">\n{res.text}\n</resource>')
        else:
            raise RequestError.invalid_params({"prompt": f"{block.type} content is not supported"})
    text = "\n\n".join(p for p in parts if p)
    if not text.strip():
        raise RequestError.invalid_params({"prompt": "the prompt has no text"})
    return text


class Translation:
    """One turn's committed events as ACP session updates (no I/O)."""

    def __init__(self, turn_id: str) -> None:
        self.turn_id = turn_id
        self.spoke = False
        #: the last model.completed said the final answer (no tool calls)
        self.answered = False

    def tool_call_id(self, call_id: str) -> str:
        # provider call ids repeat across turns ("call_1"): unique within the session
        return f"{self.turn_id}/{call_id}"

    def _say(self, text: str) -> AgentMessageChunk:
        chunk = "\n\n" + text if self.spoke else text
        self.spoke = True
        return update_agent_message_text(chunk)

    def updates(self, event: Event) -> list[Update]:
        data = event.data
        raw = data.get("message")
        message: dict[str, Any] = raw if isinstance(raw, dict) else {}
        out: list[Update] = []
        if event.type == "model.completed":
            text = str(message.get("content") or "")
            calls = [c for c in message.get("tool_calls") or () if isinstance(c, dict)]
            if text:
                out.append(self._say(text))
            self.answered = bool(text) and not calls
            for call in calls:
                name = str(call.get("name", "tool"))
                out.append(
                    start_tool_call(
                        self.tool_call_id(str(call.get("id"))),
                        name,
                        kind="other",
                        status="pending",
                        raw_input=call.get("arguments"),
                    )
                )
        elif event.type in ("tool.completed", "tool.interrupted") and message.get("tool_call_id"):
            failed = event.type == "tool.interrupted" or bool(message.get("is_error"))
            content = str(message.get("content") or "")
            out.append(
                update_tool_call(
                    self.tool_call_id(str(message["tool_call_id"])),
                    status="failed" if failed else "completed",
                    content=[tool_content(text_block(content))] if content else None,
                    raw_output=content,
                )
            )
        elif event.type == "input.requested" and data.get("kind") not in PERMISSION_KINDS:
            rid = data.get("request_id")
            out.append(
                self._say(
                    f"(waiting for an answer to a {data.get('kind')} request, {rid}: answer "
                    f"it over the API, POST …/turns/{self.turn_id}/inputs/{rid})"
                )
            )
        elif event.type == "turn.completed" and not self.answered:
            text = str((data.get("result") or {}).get("text") or "")
            if text:
                out.append(self._say(text))
        return out


def stop_reason(state: str, error: dict[str, Any] | None, cancelling: bool) -> StopReason:
    """The ACP stop reason of a turn's end; ``RequestError`` for a failure."""
    if cancelling or state == "cancelled":
        return "cancelled"
    if state == "completed":
        return "end_turn"
    error = error or {}
    if error.get("code") == "budget_exceeded":
        return "max_tokens" if error.get("bound") == "max_tokens" else "max_turn_requests"
    raise RequestError(
        -32603, f"the turn failed: {error.get('code')}: {error.get('message', '')}", error
    )


def rpc_error(exc: ApiError) -> RequestError:
    data = {"code": exc.code, "status": exc.status, "detail": exc.detail}
    if exc.status == 401 or exc.code == "auth_not_configured":
        return RequestError.auth_required(data)
    return RequestError(-32603, f"turnkeep: {exc}", data)


@dataclass
class _Session:
    next_prompt: int = 1
    turn_id: str | None = None
    cancelling: bool = False
    asks: set[asyncio.Task[None]] = field(default_factory=set)

    def answered(self, n: int) -> None:
        self.next_prompt = max(self.next_prompt, n + 1)


class TurnkeepAgent:
    """The ACP agent side: every method is one translation onto the HTTP API."""

    def __init__(self, client: AsyncClient, agent: str) -> None:
        self.client = client
        self.agent = agent
        self.sessions: dict[str, _Session] = {}
        self._conn: acp.Client | None = None

    def on_connect(self, conn: acp.Client) -> None:
        self._conn = conn

    @property
    def conn(self) -> acp.Client:
        assert self._conn is not None, "not connected"
        return self._conn

    async def initialize(
        self,
        protocol_version: int,
        client_capabilities: Any = None,
        client_info: Any = None,
        **kwargs: Any,
    ) -> InitializeResponse:
        return InitializeResponse(
            protocol_version=min(protocol_version, acp.PROTOCOL_VERSION),
            agent_capabilities=AgentCapabilities(
                load_session=False,
                prompt_capabilities=PromptCapabilities(embedded_context=True),
            ),
            agent_info=Implementation(
                name="turnkeep", title=f"turnkeep: {self.agent}", version=_version()
            ),
            auth_methods=[],
        )

    async def new_session(
        self, cwd: str, mcp_servers: Any = None, **kwargs: Any
    ) -> NewSessionResponse:
        sid = f"acp-{uuid.uuid4().hex}"
        self.sessions[sid] = _Session()
        return NewSessionResponse(session_id=sid)

    async def prompt(
        self, prompt: list[ContentBlock], session_id: str, **kwargs: Any
    ) -> PromptResponse:
        session = self.sessions.get(session_id)
        if session is None:
            raise RequestError.invalid_params({"sessionId": "unknown session"})
        text = prompt_text(prompt)
        n = session.next_prompt
        tid = _turn_id(session_id, n, kwargs.get(IDEMPOTENCY_META))
        session.cancelling = False
        try:
            turn = await self.client.turns.admit(session_id, self.agent, text, idempotency_key=tid)
        except Unreachable as exc:
            raise rpc_error(exc) from exc  # n stays: a retry reaches the same turn id
        except ApiError as exc:
            session.answered(n)
            raise rpc_error(exc) from exc
        session.turn_id = turn.turn_id
        try:
            if session.cancelling:  # session/cancel came while the turn was admitted
                await self._cancel_turn(session_id, tid)
            state, error = await self._follow(session_id, session, tid, turn.accepted_seq)
        except ApiError as exc:
            raise rpc_error(exc) from exc  # n stays: a retry follows the same turn again
        finally:
            session.turn_id = None
            for task in session.asks:
                task.cancel()
        session.answered(n)
        meta = {"turnkeep/turnId": tid, "turnkeep/state": state}
        reason = stop_reason(state, error, session.cancelling)
        return PromptResponse(stop_reason=reason, field_meta=meta)

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        session = self.sessions.get(session_id)
        if session is None:
            return
        session.cancelling = True
        if session.turn_id is not None:
            await self._cancel_turn(session_id, session.turn_id)

    async def _cancel_turn(self, sid: str, tid: str) -> None:
        try:
            await self.client.turns.cancel(sid, tid)
        except ApiError as exc:
            if exc.code != "turn_not_active":  # ended already: its end answers the prompt
                log.warning("cancel of turn %s failed: %s", tid, exc)

    async def _follow(
        self, sid: str, session: _Session, tid: str, accepted_seq: int
    ) -> tuple[str, dict[str, Any] | None]:
        """Send the turn's updates until its terminal event: (state, error)."""
        translation = Translation(tid)
        events = self.client.sessions.events(sid, after=accepted_seq - 1)
        async with contextlib.aclosing(events) as stream:
            async for event in stream:
                if event.turn_id != tid:
                    continue
                for update in translation.updates(event):
                    await self.conn.session_update(session_id=sid, update=update)
                if event.type == "input.requested" and event.data.get("kind") in PERMISSION_KINDS:
                    # asked on the side: the journal keeps flowing while a person decides
                    task = asyncio.create_task(self._ask(sid, tid, event, translation))
                    session.asks.add(task)
                    task.add_done_callback(session.asks.discard)
                if event.terminal:
                    error = event.data.get("error") if event.type == "turn.failed" else None
                    return event.type.removeprefix("turn."), error
        raise AssertionError("unreachable: the event stream never ends")  # pragma: no cover

    async def _ask(self, sid: str, tid: str, event: Event, translation: Translation) -> None:
        data = event.data
        rid = str(data.get("request_id"))
        try:
            # a prompt that follows a turn again replays requests answered long ago; one
            # asked together with others is open once the last of them parks the turn
            turn = await self.client.turns.wait(sid, tid, 30.0)
            if not any(p.request_id == rid for p in turn.pending_inputs):
                pending = turn.pending_input
                if pending is None or pending.request_id != rid or pending.resolved:
                    return
            tool = data.get("tool") or {}
            title = str(tool.get("name") or data.get("kind"))
            if data.get("kind") == "budget_extension":
                title = f"extend the turn's budget ({(data.get('detail') or {}).get('bound')})"
            response = await self.conn.request_permission(
                session_id=sid,
                options=OPTIONS,
                tool_call=ToolCallUpdate(
                    tool_call_id=translation.tool_call_id(str(data.get("call_id") or rid)),
                    title=title,
                    status="pending",
                    raw_input=data.get("arguments"),
                ),
            )
            outcome = response.outcome
            if not isinstance(outcome, AllowedOutcome) or outcome.option_id not in (ALLOW, REJECT):
                await self._cancel_turn(sid, tid)  # "cancelled": the prompt turn is over
                return
            body: dict[str, Any] = {"approved": outcome.option_id == ALLOW}
            if outcome.option_id == REJECT:
                body["reason"] = "rejected in the editor"
            await self.client.turns.answer(sid, tid, rid, body)
        except ApiError as exc:
            if exc.code not in _CLOSED:
                log.warning("input request %s of turn %s: %s", rid, tid, exc)
        except (RequestError, ConnectionError) as exc:
            log.warning("permission request %s of turn %s failed: %s", rid, tid, exc)
        except Exception:  # a task of its own: say it, or nobody hears of it
            log.exception("input request %s of turn %s", rid, tid)


def _turn_id(sid: str, n: int, key: object) -> str:
    if key is None:
        return f"{sid}.{n}"
    if not isinstance(key, str) or not _ID.fullmatch(key):
        raise RequestError.invalid_params({IDEMPOTENCY_META: "must match [A-Za-z0-9._-]{1,128}"})
    return key


def _version() -> str:
    try:
        return metadata.version("turnkeep")
    except metadata.PackageNotFoundError:  # pragma: no cover - a source checkout
        return "0"


async def serve(agent: str, url: str | None = None) -> None:
    """Speak ACP on stdin/stdout until stdin closes."""
    async with AsyncClient(url) as client:
        # the router calls only the methods an agent has (the rest: method not found);
        # acp.Agent's Protocol lists them all, so the cast
        await acp.run_agent(cast(acp.Agent, TurnkeepAgent(client, agent)))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="turnkeep acp",
        description="An ACP agent over stdio, backed by the turnkeep API "
        "(TURNKEEP_URL, TURNKEEP_TOKEN).",
    )
    parser.add_argument("--agent", required=True, help="the turnkeep agent every prompt runs")
    parser.add_argument("--url", default=None, help="the API's base URL (default: TURNKEEP_URL)")
    args = parser.parse_args(argv)
    logging.basicConfig(stream=sys.stderr, level=ClientSettings.from_env().log_level)
    asyncio.run(serve(args.agent, args.url))


if __name__ == "__main__":
    main()
