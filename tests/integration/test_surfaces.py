"""One submit path for every surface: the same idempotency key through HTTP and MCP
reaches the same turn, other input under it is refused on either, and another
tenant sees none of it on any surface."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import httpx
import pytest

from tests.integration.api_server import Api, serve_api
from tests.integration.test_mcp import connect, run, text


@pytest.fixture(scope="module")
def api(service_env: dict[str, str]) -> Iterator[Api]:
    with serve_api(
        service_env, agents="tests.agents", broker_url=service_env["TURNKEEP_REDIS_URL"]
    ) as handle:
        yield handle


def _http_admit(c: httpx.Client, sid: str, key: str, prompt: str) -> httpx.Response:
    return c.post(
        f"/v1/sessions/{sid}/turns",
        json={"agent": "memory", "input": [{"role": "user", "content": prompt}]},
        headers={"Idempotency-Key": key},
    )


def test_one_key_one_turn_across_http_and_mcp(api, procs, store, sid):
    procs.worker()
    procs.beat()
    key = f"k-{uuid.uuid4().hex[:8]}"
    c = api.client()
    first = _http_admit(c, sid, key, "hello")
    assert first.status_code == 202, first.text

    async def over_mcp(prompt: str, who: str = "a"):
        async with connect(api, who) as session:
            return await session.call_tool(
                "memory", {"prompt": prompt, "session_id": sid, "idempotency_key": key}
            )

    same = run(lambda: over_mcp("hello"))
    assert not same.is_error, text(same)
    assert text(same) == "seen 1: hello"
    assert [t.turn_id for t in store.reads.list_turns(api.tenant_a, sid)] == [key]
    # other input under the key is refused on both surfaces
    other = run(lambda: over_mcp("something else"))
    assert other.is_error and text(other).startswith("idempotency_conflict")
    again = _http_admit(c, sid, key, "something else")
    assert again.status_code == 409 and again.json()["code"] == "idempotency_conflict"
    # the HTTP replay answers the turn the MCP call followed
    replay = _http_admit(c, sid, key, "hello")
    assert replay.status_code == 200 and replay.json()["state"] == "completed"
    # tenant b: the same ids are nobody's turn there
    b = api.client("b")
    assert b.get(f"/v1/sessions/{sid}/turns/{key}").status_code == 404
    status = run(lambda: _mcp_status(api, sid, key, "b"))
    assert status.is_error and text(status).startswith("not_found")
    assert len(store.reads.list_turns(api.tenant_a, sid)) == 1


async def _mcp_status(api: Api, sid: str, key: str, who: str):
    async with connect(api, who) as session:
        return await session.call_tool("turnkeep_status", {"session_id": sid, "turn_id": key})
