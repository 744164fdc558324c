"""A deleted session on every surface (docs/erasure.md): each answers its own way of
"gone", none re-creates it, and another tenant still sees nothing. MCP's tools answer a
tool error ``session_deleted``; A2A a JSON-RPC InvalidParams with ``data.code``
``session_deleted`` (a task of another tenant's session: TaskNotFound); a workflow
node's route 410; a schedule whose session was deleted is paused, its tick admitting
nothing. (The chat bridges: tests/integration/test_generic_bridge.py.)"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import anyio
import httpx
import mcp_types as types
import pytest
from a2a.client import ClientConfig, create_client
from a2a.types import GetTaskRequest, InvalidParamsError, TaskNotFoundError

from tests.integration.api_server import Api, admit, serve_api, session_at
from tests.integration.test_a2a import _message, _send
from turnkeep.api.a2a import ids
from turnkeep.recovery.schedules import fire_once
from turnkeep.runtime.agents.registry import load_agents
from turnkeep.store.facade import Store

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def api(service_env: dict[str, str]) -> Iterator[Api]:
    with serve_api(service_env, agents="tests.agents") as handle:
        yield handle


def _deleted(api: Api, sid: str, agent: str = "demo") -> None:
    """A session of tenant a (one queued turn: no worker needed), deleted."""
    c = api.client()
    assert admit(c, sid, "t1", agent=agent).status_code == 202
    assert c.delete(f"/v1/sessions/{sid}").status_code == 202


def test_mcp_tools_answer_session_deleted(api: Api) -> None:
    sid = f"s-mcp-{uuid.uuid4().hex[:8]}"
    _deleted(api, sid)

    def text(result: types.CallToolResult) -> str:
        return "".join(c.text for c in result.content if isinstance(c, types.TextContent))

    async def scenario() -> None:
        with anyio.fail_after(60):
            await steps()

    async def steps() -> None:
        async with session_at(api.url, api.token_a) as s:
            new = await s.call_tool("demo", {"prompt": "again", "session_id": sid})
            assert new.is_error and text(new) == "session_deleted: the session was deleted"
            status = await s.call_tool("turnkeep_status", {"session_id": sid, "turn_id": "t1"})
            assert status.is_error and text(status).startswith("session_deleted: ")
        async with session_at(api.url, api.token_b) as b:
            theirs = await b.call_tool("turnkeep_status", {"session_id": sid, "turn_id": "t1"})
            assert theirs.is_error and text(theirs) == "not_found: turn not found"

    anyio.run(scenario)


def test_a2a_answers_session_deleted_and_another_tenant_task_not_found(api: Api) -> None:
    sid = f"s-a2a-{uuid.uuid4().hex[:8]}"
    _deleted(api, sid, agent="memory")
    task_id = ids.turn_id_for(sid, "m-1")

    async def run(token: str) -> None:
        headers = {"Authorization": f"Bearer {token}"}
        async with httpx.AsyncClient(headers=headers, timeout=30) as http:
            client = await create_client(f"{api.url}/a2a/memory", ClientConfig(httpx_client=http))
            try:
                if token == api.token_b:
                    with pytest.raises(TaskNotFoundError):
                        await client.get_task(GetTaskRequest(id=task_id))
                    return
                with pytest.raises(InvalidParamsError) as read:
                    await client.get_task(GetTaskRequest(id=task_id))
                assert read.value.data == {"code": "session_deleted"}
                with pytest.raises(InvalidParamsError) as sent:
                    await _send(client, _message("hello", context_id=sid))
                assert sent.value.data == {"code": "session_deleted"}
            finally:
                await client.close()

    anyio.run(run, api.token_a)
    anyio.run(run, api.token_b)


def test_a_workflow_nodes_deleted_session_is_410(api: Api) -> None:
    c, run_id = api.client(), f"run-{uuid.uuid4().hex[:8]}"
    node = f"/v1/workflows/{run_id}/nodes/n1"
    body = {"agent": "demo", "input": [{"role": "user", "content": "go"}]}
    first = c.post(f"{node}/turns", json=body)
    assert first.status_code == 202, first.text
    sid = first.json()["session_id"]
    assert c.delete(f"/v1/sessions/{sid}").status_code == 202
    for r in (c.post(f"{node}/turns", json=body), c.get(node)):
        assert r.status_code == 410 and r.json()["code"] == "session_deleted", r.text
    assert api.client("b").get(node).status_code == 404


def test_a_schedule_whose_session_was_deleted_is_paused(api: Api, store: Store) -> None:
    tenant, c = api.tenant_a, api.client()
    sid = f"s-sched-{uuid.uuid4().hex[:8]}"
    assert admit(c, sid, "t1").status_code == 202
    made = c.post(
        "/v1/schedules",
        json={
            "agent": "demo",
            "schedule_id": f"every-{sid}",
            "every_seconds": 60,
            "input": [{"role": "user", "content": "tick"}],
            "session_id": sid,
        },
    )
    assert made.status_code == 201, made.text
    assert c.delete(f"/v1/sessions/{sid}").status_code == 202
    schedule_id = made.json()["schedule_id"]
    store.schedules.pause_schedule(tenant, schedule_id, paused=False, next_at=datetime.now(UTC))
    sent: list[tuple[str, str]] = []
    later = datetime.now(UTC) + timedelta(minutes=2)
    report = fire_once(
        store, load_agents("tests.agents"), lambda t, s: sent.append((t, s)), grace=600, now=later
    )
    assert report.fired == 0 and sent == []
    assert store.schedules.get_schedule(tenant, schedule_id).paused
    # the tick admitted nothing: the session holds its one turn, its erasure to come
    assert [t.turn_id for t in store.reads.list_turns(tenant, sid)] == ["t1"]
    assert c.get(f"/v1/schedules/{schedule_id}").json()["paused"] is True
