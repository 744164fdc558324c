"""The MCP surface (api/mcp_server.py) through the SDK's own client, against a live
API and, where a turn must run, a real celery worker."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx
import mcp_types as types
import pytest
from mcp.client.session import ClientSession
from mcp.shared.exceptions import MCPError

from tests.integration.api_server import Api, serve_api, session_at
from tests.procs import wait_for
from turnkeep.runtime.agents.registry import load_agents
from turnkeep.runtime.states import TurnState

PROTOCOL = "2025-11-25"


@pytest.fixture(scope="module")
def api(service_env: dict[str, str]) -> Iterator[Api]:
    # the worker processes' broker and agents, so the API's enqueues reach them
    with serve_api(
        service_env, agents="tests.agents", broker_url=service_env["TURNKEEP_REDIS_URL"]
    ) as handle:
        yield handle


@asynccontextmanager
async def connect(
    api: Api, who: str = "a", *, modern: bool = False
) -> AsyncIterator[ClientSession]:
    """An SDK client session with tenant ``who``'s bearer token: the handshake era
    (``initialize``), or with ``modern`` the 2026 one (``server/discover``)."""
    token = api.token_a if who == "a" else api.token_b
    async with session_at(api.url, token, modern=modern) as session:
        yield session


def run(scenario: Any) -> Any:
    """Run an async scenario to completion (within 60 s) and return its result."""

    async def bounded() -> Any:
        with anyio.fail_after(60):
            return await scenario()

    return anyio.run(bounded)


def text(result: types.CallToolResult) -> str:
    return "".join(c.text for c in result.content if isinstance(c, types.TextContent))


# -- a raw Streamable HTTP client: what the SDK's client never does (no token, another
# principal's session id, going away mid-call) --------------------------------------------


def _rpc(method: str, params: dict[str, Any] | None = None, rid: int | None = None) -> dict:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        message["params"] = params
    if rid is not None:
        message["id"] = rid
    return message


def _headers(token: str | None, session: str | None = None) -> dict[str, str]:
    headers = {"Accept": "application/json, text/event-stream"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    if session is not None:
        headers["Mcp-Session-Id"] = session
        headers["Mcp-Protocol-Version"] = PROTOCOL
    return headers


def raw_initialize(c: httpx.Client, token: str) -> str:
    """Open an MCP session over plain HTTP; its id."""
    init = {"protocolVersion": PROTOCOL, "capabilities": {}, "clientInfo": {"name": "raw"}}
    r = c.post("/mcp", json=_rpc("initialize", init, 1), headers=_headers(token))
    assert r.status_code == 200, r.text
    session = r.headers["mcp-session-id"]
    done = c.post("/mcp", json=_rpc("notifications/initialized"), headers=_headers(token, session))
    assert done.status_code == 202, done.text
    return session


# -- tests ---------------------------------------------------------------------------------


def test_every_agent_is_a_tool(api: Api) -> None:
    agents = load_agents("tests.agents")

    async def scenario() -> dict[str, types.Tool]:
        async with connect(api) as s:
            tools = {t.name: t for t in (await s.list_tools()).tools}
            # invalid arguments are a tool error naming the fields, never a turn
            for bad in ({}, {"prompt": "a", "messages": [{"role": "user", "content": "b"}]}):
                r = await s.call_tool("demo", bad)
                assert r.is_error and text(r).startswith("validation_error: "), text(r)
            r = await s.call_tool("demo", {"prompt": "x", "session_id": "no/slashes"})
            assert r.is_error and "session_id" in text(r)
            r = await s.call_tool("demo", {"prompt": "x", "output_schema": {"type": 5}})
            assert r.is_error and "output_schema" in text(r)
            with pytest.raises(MCPError) as unknown:
                await s.call_tool("no-such-agent", {"prompt": "x"})
            assert unknown.value.error.code == types.INVALID_PARAMS
            return tools

    tools = run(scenario)
    assert set(agents.names()) <= set(tools)
    assert set(tools) - set(agents.names()) == {
        "turnkeep_status",
        "turnkeep_cancel",
        "turnkeep_answer",
    }
    demo = tools["demo"]
    assert demo.description == agents.get("demo").instructions
    schema = demo.input_schema
    assert schema["type"] == "object" and schema["additionalProperties"] is False
    assert set(schema["properties"]) == {
        "prompt",
        "messages",
        "session_id",
        "idempotency_key",
        "output_schema",
        "budget",
    }
    assert schema["properties"]["prompt"]["type"] == "string"
    assert schema["properties"]["messages"]["items"]["required"] == ["role", "content"]
    assert tools["turnkeep_cancel"].input_schema["required"] == ["session_id", "turn_id"]


def test_no_token_is_401_before_mcp(api: Api) -> None:
    init = _rpc("initialize", {"protocolVersion": PROTOCOL, "capabilities": {}}, 1)
    with httpx.Client(base_url=api.url, timeout=10) as c:
        for token in (None, "wrong-token"):
            r = c.post("/mcp", json=init, headers=_headers(token))
            assert r.status_code == 401
            assert r.headers["www-authenticate"] == "Bearer"
            assert r.json()["code"] == "unauthorized"
        # an MCP session is bound to the principal that opened it
        session = raw_initialize(c, api.token_a)
        listing = _rpc("tools/list", {}, 2)
        mine = c.post("/mcp", json=listing, headers=_headers(api.token_a, session))
        assert mine.status_code == 200 and "turnkeep_status" in mine.text
        theirs = c.post("/mcp", json=listing, headers=_headers(api.token_b, session))
        assert theirs.status_code == 404
        assert c.delete("/mcp", headers=_headers(api.token_a, session)).status_code == 200


@pytest.mark.parametrize("modern", [False, True], ids=["handshake", "2026"])
def test_demo_tool_answers_with_progress(api: Api, procs: Any, store: Any, modern: bool) -> None:
    procs.worker()
    progress: list[tuple[float, str | None]] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, message))

    async def scenario() -> types.CallToolResult:
        async with connect(api, modern=modern) as s:
            return await s.call_tool(
                "demo", {"prompt": "What is the weather in Lisbon?"}, progress_callback=on_progress
            )

    result = run(scenario)
    assert not result.is_error, text(result)
    assert text(result).startswith("In Lisbon it is "), text(result)
    turn = result.structured_content
    assert turn is not None and turn["state"] == "completed" and turn["agent"] == "demo"
    assert turn["result"]["text"] == text(result)
    # one notification per committed event of the turn, named by its type, in seq order
    events = store.reads.turn_events(api.tenant_a, turn["session_id"], turn["turn_id"])
    assert progress == [(float(e.seq), e.type) for e in events]
    assert [m for _, m in progress] == [
        "turn.accepted",
        "turn.started",
        "model.completed",
        "tool.completed",
        "model.completed",
        "turn.completed",
    ]


def test_idempotency_keys_sessions_and_failures(api: Api, procs: Any, store: Any) -> None:
    procs.worker()
    sid, key = f"s-{uuid.uuid4().hex[:8]}", f"k-{uuid.uuid4().hex[:8]}"

    async def scenario() -> list[types.CallToolResult]:
        async with connect(api) as s:
            args = {"prompt": "first", "session_id": sid, "idempotency_key": key}
            once = await s.call_tool("memory", args)
            again = await s.call_tool("memory", args)
            other = await s.call_tool("memory", {**args, "prompt": "other"})
            # no key, no session: one session per MCP session and agent, a turn per call
            a = await s.call_tool("memory", {"prompt": "a"})
            b = await s.call_tool("memory", {"prompt": "b"})
            failed = await s.call_tool("json", {"prompt": "bad"})
            return [once, again, other, a, b, failed]

    once, again, other, a, b, failed = run(scenario)
    assert not once.is_error and text(once) == "seen 1: first"
    assert again.structured_content == once.structured_content
    assert [t.turn_id for t in store.reads.list_turns(api.tenant_a, sid)] == [key]
    assert other.is_error and text(other).startswith("idempotency_conflict: ")
    assert other.structured_content == {
        "error": {
            "code": "idempotency_conflict",
            "message": "this Idempotency-Key was already used with another request",
        }
    }
    assert (text(a), text(b)) == ("seen 1: a", "seen 2: a | b")
    ta, tb = a.structured_content or {}, b.structured_content or {}
    assert ta["session_id"] == tb["session_id"] and ta["session_id"].startswith("mcp-")
    assert ta["turn_id"] != tb["turn_id"] and ta["turn_id"].startswith("mcp-")
    assert failed.is_error and text(failed).startswith("output_invalid: ")
    assert (failed.structured_content or {})["error"]["code"] == "output_invalid"


def test_another_tenant_sees_no_turn(api: Api, store: Any) -> None:
    # no worker: the turn stays queued, which is all this needs
    sid, key = f"s-{uuid.uuid4().hex[:8]}", f"k-{uuid.uuid4().hex[:8]}"
    ref = {"session_id": sid, "turn_id": key}
    ended: list[types.CallToolResult] = []

    async def scenario() -> None:
        async with connect(api) as a, anyio.create_task_group() as tg:
            admitted = anyio.Event()

            async def on_progress(value: float, total: float | None, m: str | None) -> None:
                admitted.set()

            async def call() -> None:
                args = {"prompt": "go", "session_id": sid, "idempotency_key": key}
                ended.append(await a.call_tool("banker", args, progress_callback=on_progress))

            tg.start_soon(call)
            await admitted.wait()
            async with connect(api, "b") as b:
                for tool in ("turnkeep_status", "turnkeep_cancel"):
                    r = await b.call_tool(tool, ref)
                    assert r.is_error and text(r) == "not_found: turn not found", text(r)
            assert store.reads.get_turn(api.tenant_a, sid, key).state is TurnState.QUEUED
            status = await a.call_tool("turnkeep_status", ref)
            assert not status.is_error and text(status) == "turn queued"
            cancelled = await a.call_tool("turnkeep_cancel", ref)
            assert not cancelled.is_error, text(cancelled)
            assert (cancelled.structured_content or {})["state"] == "cancelled"
        # the call that waited on the turn ends with it, as a tool error

    run(scenario)
    assert store.reads.get_turn(api.tenant_a, sid, key).state is TurnState.CANCELLED
    [result] = ended
    assert result.is_error and text(result) == "cancelled: the turn was cancelled"
    assert (result.structured_content or {})["turn_id"] == key


def test_cancelled_call_cancels_its_turn(api: Api, store: Any) -> None:
    sid, key = f"s-{uuid.uuid4().hex[:8]}", f"k-{uuid.uuid4().hex[:8]}"

    async def scenario() -> None:
        async with connect(api) as s:
            admitted = anyio.Event()

            async def on_progress(value: float, total: float | None, m: str | None) -> None:
                admitted.set()

            async with anyio.create_task_group() as tg:
                tg.start_soon(
                    lambda: s.call_tool(
                        "banker",
                        {"prompt": "go", "session_id": sid, "idempotency_key": key},
                        progress_callback=on_progress,
                    )
                )
                await admitted.wait()
                tg.cancel_scope.cancel()  # the SDK sends notifications/cancelled
            # the session is fine afterwards
            assert (await s.list_tools()).tools

    run(scenario)
    turn = wait_for(
        lambda: (t := store.reads.get_turn(api.tenant_a, sid, key)).state.terminal and t, 60
    )
    assert turn.state is TurnState.CANCELLED
    types_ = [e.type for e in store.reads.turn_events(api.tenant_a, sid, key)]
    assert types_ == ["turn.accepted", "turn.cancel_requested", "turn.cancelled"]


def test_going_away_cancels_nothing(api: Api, store: Any) -> None:
    sid, key = f"s-{uuid.uuid4().hex[:8]}", f"k-{uuid.uuid4().hex[:8]}"
    call = _rpc(
        "tools/call",
        {
            "name": "banker",
            "arguments": {"prompt": "go", "session_id": sid, "idempotency_key": key},
            "_meta": {"progressToken": "p1"},
        },
        7,
    )
    with httpx.Client(base_url=api.url, timeout=10) as c:
        session = raw_initialize(c, api.token_a)
        headers = _headers(api.token_a, session)
        with c.stream("POST", "/mcp", json=call, headers=headers) as r:
            assert r.status_code == 200
            for line in r.iter_lines():
                if line.startswith("data:") and "notifications/progress" in line:
                    assert json.loads(line[5:])["params"]["message"] == "turn.accepted"
                    break
        # the response stream is closed: the turn goes on
        anyio.run(anyio.sleep, 1.0)
        assert store.reads.get_turn(api.tenant_a, sid, key).state is TurnState.QUEUED
        # and so it does once the MCP session is gone
        assert c.delete("/mcp", headers=headers).status_code == 200
        anyio.run(anyio.sleep, 0.5)
        assert store.reads.get_turn(api.tenant_a, sid, key).state is TurnState.QUEUED
        cancel = _rpc("tools/call", {"name": "turnkeep_cancel", "arguments": {}}, 8)
        assert c.post("/mcp", json=cancel, headers=headers).status_code == 404
    # clean up: cancel it over HTTP
    r = api.client().post(f"/v1/sessions/{sid}/turns/{key}/cancel")
    assert r.status_code == 202, r.text


def test_the_approvals_of_one_wait_are_shown_and_answered_together(
    api: Api, procs: Any, store: Any
) -> None:
    """The answer tool answers every open request of a turn's wait in one call, all or
    none; the status tool shows them (issue 25)."""
    procs.worker()
    sid = f"s-{uuid.uuid4().hex[:8]}"
    r = api.client().post(
        f"/v1/sessions/{sid}/turns",
        json={"agent": "payroll", "input": [{"role": "user", "content": "pay"}]},
    )
    assert r.status_code == 202, r.text
    tid = r.json()["turn_id"]
    ref = {"session_id": sid, "turn_id": tid}
    wait_for(
        lambda: store.reads.get_turn(api.tenant_a, sid, tid).awaiting_input, 30, what="turn waiting"
    )

    async def scenario() -> tuple[types.CallToolResult, types.CallToolResult, Any]:
        async with connect(api) as s:
            status = await s.call_tool("turnkeep_status", ref)
            asked = (status.structured_content or {})["pending_inputs"]
            answers = [
                {"request_id": p["request_id"], "response": {"approved": p["step"] != 3}}
                for p in asked
            ]
            bad = await s.call_tool("turnkeep_answer", {**ref, "answers": []})
            async with connect(api, "b") as b:
                stranger = await b.call_tool("turnkeep_answer", {**ref, "answers": answers})
                assert stranger.is_error and text(stranger).startswith("not_found:")
            done = await s.call_tool("turnkeep_answer", {**ref, "answers": answers})
            return status, bad, done

    status, bad, done = run(scenario)
    assert text(status).startswith("turn waiting on 3 request(s): approval-2-1")
    assert bad.is_error and text(bad).startswith("validation_error")
    assert not done.is_error, text(done)
    assert (done.structured_content or {})["pending_inputs"] == []
    turn = wait_for(
        lambda: (t := store.reads.get_turn(api.tenant_a, sid, tid)).state.terminal and t,
        60,
        what="turn settled",
    )
    assert turn.state is TurnState.COMPLETED
    assert turn.result["text"].split("|")[1] == "error: not approved: no reason given"


def test_a_gated_agents_tool_describes_the_version_its_call_runs(api: Api, procs: Any) -> None:
    """tests.agents' gated agent declares v1, v2 and v3; tenant a promoted v2. Its tool
    says v2's instructions and names v2 in ``_meta`` for tenant a, and a call runs v2
    (its model answers with the instructions it was given); tenant b, which promoted
    nothing, is told v1; neither is told v3, merely the last declared."""
    agents = load_agents("tests.agents")
    procs.worker()
    promoted = api.client("a-admin").post("/v1/agents/gated/versions/2/promote")
    assert promoted.status_code == 200, promoted.text

    async def scenario() -> tuple[types.Tool, types.Tool, types.CallToolResult]:
        async with connect(api) as mine, connect(api, "b") as theirs:
            a = {t.name: t for t in (await mine.list_tools()).tools}["gated"]
            b = {t.name: t for t in (await theirs.list_tools()).tools}["gated"]
            return a, b, await mine.call_tool("gated", {"prompt": "Who are you?"})

    a, b, called = run(scenario)
    v1, v2 = agents.get("gated", "1"), agents.get("gated", "2")
    assert agents.get("gated").version == "3"
    assert (a.description, a.meta) == (
        "You are gated v2.",
        {"turnkeep/version": "2", "turnkeep/definition_hash": v2.definition_hash},
    )
    assert (b.description, b.meta) == (
        "You are gated v1.",
        {"turnkeep/version": "1", "turnkeep/definition_hash": v1.definition_hash},
    )
    assert not called.is_error and text(called) == "You are gated v2.", text(called)
    assert called.structured_content is not None
    assert called.structured_content["agent_version"] == "2"
