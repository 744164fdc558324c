"""``turnkeep acp`` end to end: the real API, a real celery worker, and the console
script as a subprocess driven over its stdio by the ``acp`` package's client side,
as an editor drives it."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, BinaryIO

import acp
import pytest
from acp.schema import (
    AgentMessageChunk,
    AllowedOutcome,
    RequestPermissionResponse,
    ToolCallProgress,
    ToolCallStart,
)

from tests.integration.api_server import Api, serve_api

TURNKEEP = str(Path(sys.executable).with_name("turnkeep"))
TERMINAL = ("completed", "failed", "cancelled")


@pytest.fixture(scope="module")
def api(service_env: dict[str, str]) -> Iterator[Api]:
    # the worker processes' broker and agents, so the API's enqueues reach them
    with serve_api(
        service_env, agents="tests.agents", broker_url=service_env["TURNKEEP_REDIS_URL"]
    ) as handle:
        yield handle


class Editor:
    """The client side of ACP: records what the agent sends, answers permissions."""

    def __init__(self, choice: str = "allow") -> None:
        self.choice = choice
        self.updates: list[Any] = []
        self.permissions: list[Any] = []

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append(update)

    async def request_permission(
        self, options: list[Any], session_id: str, tool_call: Any, **kwargs: Any
    ) -> RequestPermissionResponse:
        self.permissions.append((tool_call, [o.option_id for o in options]))
        return RequestPermissionResponse(
            outcome=AllowedOutcome(outcome="selected", option_id=self.choice)
        )

    def texts(self) -> str:
        return "".join(u.content.text for u in self.updates if isinstance(u, AgentMessageChunk))


@asynccontextmanager
async def agent_process(
    api: Api, agent: str, editor: Editor, log: BinaryIO
) -> AsyncIterator[acp.core.ClientSideConnection]:
    env = {"TURNKEEP_URL": api.url, "TURNKEEP_TOKEN": api.token_a}
    async with acp.spawn_agent_process(
        editor, TURNKEEP, "acp", "--agent", agent, env=env, transport_kwargs={"stderr": log}
    ) as (conn, _proc):
        yield conn


def run(scenario: Any, log: Path, timeout: float = 90) -> None:
    try:
        asyncio.run(asyncio.wait_for(scenario, timeout))
    except BaseException:
        print("--- turnkeep acp stderr ---\n" + log.read_text(errors="replace"))
        raise


async def running(api: Api, sid: str, tid: str) -> None:
    c = api.client()
    for _ in range(300):
        r = await asyncio.to_thread(c.get, f"/v1/sessions/{sid}/turns/{tid}")
        if r.status_code == 200 and r.json()["state"] == "running":
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"turn {tid} never ran")


def settled(api: Api, sid: str, tid: str) -> dict[str, Any]:
    c = api.client()
    for _ in range(6):
        t = c.get(f"/v1/sessions/{sid}/turns/{tid}?wait=10").json()
        if t["state"] in TERMINAL:
            return t
    raise AssertionError(f"turn {tid} did not settle: {t}")


def test_prompt_streams_updates_and_ends_the_turn(api, procs, tmp_path):
    procs.worker()
    procs.beat()  # the recovery scan: a lost message or lease only delays a turn
    editor, log = Editor(), tmp_path / "acp.log"
    c = api.client()

    async def scenario() -> None:
        with log.open("wb") as err:
            async with agent_process(api, "demo", editor, err) as conn:
                init = await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
                assert init.protocol_version == acp.PROTOCOL_VERSION
                assert init.agent_info is not None and init.agent_info.name == "turnkeep"
                assert init.agent_capabilities.load_session is False
                sid = (await conn.new_session(cwd=str(tmp_path))).session_id
                assert sid.startswith("acp-")
                prompt = [acp.text_block("Weather in Paris?")]
                # a prompt sent twice before it answered (a client's retry) is one turn
                first, again = await asyncio.gather(
                    conn.prompt(session_id=sid, prompt=prompt),
                    conn.prompt(session_id=sid, prompt=prompt),
                )
                assert first.stop_reason == again.stop_reason == "end_turn"
                assert first.field_meta == {
                    "turnkeep/turnId": f"{sid}.1",
                    "turnkeep/state": "completed",
                }
                assert again.field_meta == first.field_meta
                turn = c.get(f"/v1/sessions/{sid}/turns/{sid}.1").json()
                assert turn["state"] == "completed", turn
                assert turn["result"]["text"] in editor.texts()
                assert "Let me look that up." in editor.texts()
                starts = [u for u in editor.updates if isinstance(u, ToolCallStart)]
                done = [u for u in editor.updates if isinstance(u, ToolCallProgress)]
                assert starts and starts[0].title == "get_weather"
                assert starts[0].raw_input == {"city": "Paris"}
                assert starts[0].tool_call_id == f"{sid}.1/call_1"
                assert done and done[0].status == "completed"
                assert done[0].tool_call_id == starts[0].tool_call_id
                assert c.get(f"/v1/sessions/{sid}/turns/{sid}.2").status_code == 404
                # the next prompt is the next turn; the client's own id names it
                nxt = await conn.prompt(session_id=sid, prompt=[acp.text_block("And Rome?")])
                assert nxt.field_meta["turnkeep/turnId"] == f"{sid}.2"
                mine = await conn.prompt(
                    session_id=sid,
                    prompt=[acp.text_block("And Oslo?")],
                    **{"turnkeep/idempotencyKey": f"{sid}-mine"},
                )
                assert mine.stop_reason == "end_turn"
                assert c.get(f"/v1/sessions/{sid}/turns/{sid}-mine").json()["result"]["text"]
                assert "Oslo" in editor.texts()

    run(scenario(), log)


def test_cancel_ends_the_prompt_cancelled(api, procs, tmp_path):
    procs.worker({"TURNKEEP_DEMO_LATENCY": "1"})  # a model call takes a second
    procs.beat()
    editor, log = Editor(), tmp_path / "acp.log"

    async def scenario() -> None:
        with log.open("wb") as err:
            async with agent_process(api, "demo", editor, err) as conn:
                await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
                sid = (await conn.new_session(cwd=str(tmp_path))).session_id
                prompt = asyncio.create_task(
                    conn.prompt(session_id=sid, prompt=[acp.text_block("Weather in Lima?")])
                )
                # cancel while the first model call runs: the worker sees the request at
                # that step's commit at the latest (a request during the last model call
                # can lose the race to the turn's completion: cancel is a safe-point request)
                await running(api, sid, f"{sid}.1")
                await conn.cancel(session_id=sid)
                answer = await prompt
                assert answer.stop_reason == "cancelled"
                turn = settled(api, sid, f"{sid}.1")
                assert turn["state"] == "cancelled", turn
                assert answer.field_meta["turnkeep/state"] == "cancelled"

    run(scenario(), log)


def test_approval_becomes_a_permission_request(api, procs, tmp_path):
    procs.worker()
    procs.beat()
    editor, log = Editor("allow"), tmp_path / "acp.log"

    async def scenario() -> None:
        with log.open("wb") as err:
            async with agent_process(api, "banker", editor, err) as conn:
                await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
                sid = (await conn.new_session(cwd=str(tmp_path))).session_id
                answer = await conn.prompt(session_id=sid, prompt=[acp.text_block("pay")])
                assert answer.stop_reason == "end_turn"
                [(tool_call, options)] = editor.permissions
                assert options == ["allow", "reject"]
                assert tool_call.title == "transfer" and tool_call.raw_input == {"amount": 7}
                assert tool_call.tool_call_id == f"{sid}.1/call_1"
                turn = settled(api, sid, f"{sid}.1")
                assert turn["state"] == "completed" and turn["result"]["text"].startswith("ok: ")
                # rejected in the editor: the tool does not run, the model hears why
                editor.choice = "reject"
                answer = await conn.prompt(session_id=sid, prompt=[acp.text_block("pay")])
                assert answer.stop_reason == "end_turn"
                turn = settled(api, sid, f"{sid}.2")
                assert (
                    turn["result"]["text"] == "error: error: not approved: rejected in the editor"
                )

    run(scenario(), log)
