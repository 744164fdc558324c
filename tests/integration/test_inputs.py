"""Approvals and typed input requests, end to end: the real API, a real worker and
beat; the turn waits holding no lease, a person answers once, the turn goes on."""

from __future__ import annotations

from collections.abc import Iterator

import psycopg
import pytest

from runtime.states import TurnState
from tests.integration.api_server import Api, serve_api
from tests.invariants import check_all
from tests.procs import wait_for


@pytest.fixture(scope="module")
def api(service_env: dict[str, str]) -> Iterator[Api]:
    # the worker processes' broker and agents, so the API's enqueues reach them
    with serve_api(
        service_env, agents="tests.agents", broker_url=service_env["TURNKEEP_REDIS_URL"]
    ) as handle:
        yield handle


def _submit(c, sid: str, agent: str) -> str:
    r = c.post(
        f"/v1/sessions/{sid}/turns",
        json={"agent": agent, "input": [{"role": "user", "content": "go"}]},
    )
    assert r.status_code == 202, r.text
    return r.json()["turn_id"]


def _waiting(c, sid: str, tid: str) -> dict:
    def get():
        t = c.get(f"/v1/sessions/{sid}/turns/{tid}").json()
        return t if t["state"] == "waiting" else None

    return wait_for(get, 30, what="turn waiting")


def _settled(c, sid: str, tid: str) -> dict:
    for _ in range(6):  # long polls of up to 10 s each
        t = c.get(f"/v1/sessions/{sid}/turns/{tid}?wait=10").json()
        if t["state"] in ("completed", "failed", "cancelled"):
            return t
    raise AssertionError(f"turn {tid} did not settle: {t}")


def _effects(database_url: str, prefix: str) -> int:
    url = database_url.replace("postgresql+psycopg://", "postgresql://")
    with psycopg.connect(url) as conn:
        return conn.execute(
            "SELECT count(*) FROM test_tool_effects WHERE key LIKE %s", (prefix + "%",)
        ).fetchone()[0]


def test_approved_tool_runs_once_after_approval(api, procs, store, sid, database_url, redis_url):
    procs.worker()
    c = api.client()
    tid = _submit(c, sid, "banker")
    turn = _waiting(c, sid, tid)
    pending = turn["pending_input"]
    assert (pending["kind"], pending["tool"], pending["arguments"]) == (
        "approval",
        "transfer",
        {"amount": 7},
    )
    assert _effects(database_url, f"{api.tenant_a}/{sid}/{tid}/") == 0  # not before approval
    # the waiting turn holds no lease: nothing runs while a person thinks
    assert store.lane_head(api.tenant_a, sid).runnable is False
    rid = pending["request_id"]
    bad = c.post(f"/v1/sessions/{sid}/turns/{tid}/inputs/{rid}", json={"approved": "yes"})
    assert bad.status_code == 422 and bad.json()["code"] == "validation_error"
    # another tenant sees no such turn, exactly as a missing one
    other = api.client("b").post(
        f"/v1/sessions/{sid}/turns/{tid}/inputs/{rid}", json={"approved": True}
    )
    assert other.status_code == 404
    ok = c.post(
        f"/v1/sessions/{sid}/turns/{tid}/inputs/{rid}", json={"approved": True, "reason": "fine"}
    )
    assert ok.status_code == 200, ok.text
    again = c.post(f"/v1/sessions/{sid}/turns/{tid}/inputs/{rid}", json={"approved": False})
    assert again.status_code == 409 and again.json()["code"] == "input_not_open"
    done = _settled(c, sid, tid)
    assert done["state"] == "completed", done
    assert done["result"]["text"].startswith("ok: ")
    assert _effects(database_url, f"{api.tenant_a}/{sid}/{tid}/") == 1
    types = [e.type for e in store.turn_events(api.tenant_a, sid, tid)]
    assert types == [
        "turn.accepted",
        "turn.started",
        "model.completed",
        "input.requested",
        "input.resolved",
        "turn.started",
        "tool.completed",
        "model.completed",
        "turn.completed",
    ]
    assert store.get_turn(api.tenant_a, sid, tid).attempt == 1  # a wait is not a retry
    assert check_all(database_url, tenants=[api.tenant_a]) == []


def test_refused_approval_becomes_an_error_result(api, procs, sid, database_url):
    procs.worker()
    c = api.client()
    tid = _submit(c, sid, "banker")
    rid = _waiting(c, sid, tid)["pending_input"]["request_id"]
    r = c.post(
        f"/v1/sessions/{sid}/turns/{tid}/inputs/{rid}",
        json={"approved": False, "reason": "too much"},
    )
    assert r.status_code == 200
    done = _settled(c, sid, tid)
    assert done["result"]["text"] == "error: error: not approved: too much"
    assert _effects(database_url, f"{api.tenant_a}/{sid}/{tid}/") == 0


def test_typed_input_answer_is_the_tool_result(api, procs, sid):
    procs.worker()
    c = api.client()
    tid = _submit(c, sid, "asker")
    pending = _waiting(c, sid, tid)["pending_input"]
    assert pending["kind"] == "input"
    url = f"/v1/sessions/{sid}/turns/{tid}/inputs/{pending['request_id']}"
    assert c.post(url, json={"answer": ""}).status_code == 422  # minLength 1
    assert c.post(url, json={"answer": "Ada", "extra": 1}).status_code == 422
    assert (
        c.post(f"/v1/sessions/{sid}/turns/{tid}/inputs/step-99", json={"answer": "Ada"}).status_code
        == 404
    )
    assert c.post(url, json={"answer": "Ada"}).status_code == 200
    done = _settled(c, sid, tid)
    assert done["result"]["text"] == 'ok: "Ada"'


def test_expired_request_is_settled_by_the_scan(api, procs, store, sid):
    procs.worker()
    procs.beat()
    c = api.client()
    tid = _submit(c, sid, "hasty")
    rid = _waiting(c, sid, tid)["pending_input"]["request_id"]
    done = _settled(c, sid, tid)
    assert done["state"] == "completed", done
    assert "expired" in done["result"]["text"]
    late = c.post(f"/v1/sessions/{sid}/turns/{tid}/inputs/{rid}", json={"answer": "x"})
    assert late.status_code == 409 and late.json()["code"] == "input_not_open"
    resolved = [e for e in store.turn_events(api.tenant_a, sid, tid) if e.type == "input.resolved"]
    assert len(resolved) == 1 and resolved[0].data["by"] == "recovery"
    assert store.get_turn(api.tenant_a, sid, tid).state is TurnState.COMPLETED


def test_cancel_settles_a_waiting_turn_at_once_and_the_lane_moves_on(
    api, procs, store, sid, database_url
):
    # a waiting turn holds no worker: the API cancels it in its own statement, no
    # worker needed, and enqueues the session so the turn queued behind it runs
    procs.worker()
    c = api.client()
    first = _submit(c, sid, "banker")
    _waiting(c, sid, first)
    second = _submit(c, sid, "banker")  # a session is bound to one agent
    r = c.post(f"/v1/sessions/{sid}/turns/{first}/cancel")
    assert r.status_code == 202, r.text
    assert r.json()["state"] == "cancelled" and r.json()["pending_input"] is None
    answer = c.post(f"/v1/sessions/{sid}/turns/{first}/inputs/step-2", json={"approved": True})
    assert answer.status_code in (404, 409), answer.text  # nothing left to answer
    # the lane moved on: the second turn ran up to its own approval request
    assert _waiting(c, sid, second)["pending_input"]["kind"] == "approval"
    assert c.post(f"/v1/sessions/{sid}/turns/{second}/cancel").json()["state"] == "cancelled"
    assert _effects(database_url, f"{api.tenant_a}/{sid}/") == 0
    types = [e.type for e in store.turn_events(api.tenant_a, sid, first)]
    assert types[-2:] == ["turn.cancel_requested", "turn.cancelled"]
    # this session's journal: contiguous, one terminal event per turn (the tenant is
    # shared with this module's other tests, whose refused calls check_all would count)
    events, head = store.list_events(api.tenant_a, sid, after=0)
    assert [e.seq for e in events] == list(range(1, head + 1))
    for tid in (first, second):
        ends = [e for e in events if e.turn_id == tid and e.type == "turn.cancelled"]
        assert len(ends) == 1
