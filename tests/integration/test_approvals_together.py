"""Approvals answered together (issue 25, runtime/input_groups.py): the three effectful
calls of one model answer are asked for in one wait, each its own request bound to
its own call; one POST answers them (two approved, one denied) and exactly the
approved two run; answered one by one instead, the turn goes on only after the last,
and an answer naming one already answered records none. The real API, a real worker."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import httpx
import psycopg
import pytest

from tests.integration.api_server import Api, serve_api
from tests.invariants import check_all
from tests.procs import wait_for


@pytest.fixture(scope="module")
def api(service_env: dict[str, str]) -> Iterator[Api]:
    with serve_api(
        service_env, agents="tests.agents", broker_url=service_env["TURNKEEP_REDIS_URL"]
    ) as handle:
        yield handle


def _waiting(c: httpx.Client, sid: str, tid: str) -> dict[str, Any]:
    def get() -> dict[str, Any] | None:
        t = c.get(f"/v1/sessions/{sid}/turns/{tid}").json()
        return t if t["state"] == "waiting" else None

    found: dict[str, Any] = wait_for(get, 30, what="turn waiting")
    return found


def _settled(c: httpx.Client, sid: str, tid: str) -> dict[str, Any]:
    end = time.monotonic() + 60
    while time.monotonic() < end:
        t: dict[str, Any] = c.get(f"/v1/sessions/{sid}/turns/{tid}?wait=10").json()
        if t["state"] in ("completed", "failed", "cancelled"):
            return t
    raise AssertionError(f"turn {tid} did not settle")


def _runs(database_url: str, key: str) -> int:
    with psycopg.connect(database_url.replace("+psycopg", "")) as conn:
        row = conn.execute("SELECT count(*) FROM test_tool_calls WHERE key = %s", (key,)).fetchone()
    assert row is not None
    return int(row[0])


def _submit(c: httpx.Client, sid: str) -> str:
    r = c.post(
        f"/v1/sessions/{sid}/turns",
        json={"agent": "payroll", "input": [{"role": "user", "content": "pay them"}]},
    )
    assert r.status_code == 202, r.text
    return str(r.json()["turn_id"])


def test_three_approvals_asked_in_one_wait_and_answered_in_one_post(
    api: Api, procs: Any, store: Any, sid: str, database_url: str
) -> None:
    procs.worker()
    c = api.client()
    tid = _submit(c, sid)
    turn = _waiting(c, sid, tid)
    asked = turn["pending_inputs"]
    assert [(p["kind"], p["step"], p["arguments"]) for p in asked] == [
        ("approval", 2, {"amount": 1}),
        ("approval", 3, {"amount": 2}),
        ("approval", 4, {"amount": 3}),
    ]
    assert turn["pending_input"] == asked[0]
    assert len({p["request_id"] for p in asked}) == 3
    assert all(p["tool"]["name"] == "pay" and p["call_id"] for p in asked)
    # one wait: the three requests after one model call, one attempt, nothing ran
    types = [e.type for e in store.reads.turn_events(api.tenant_a, sid, tid)]
    assert types == [
        "turn.accepted",
        "turn.started",
        "model.completed",
        "input.requested",
        "input.requested",
        "input.requested",
    ]
    prefix = f"{api.tenant_a}/{sid}/{tid}"
    answers = [
        {"request_id": asked[0]["request_id"], "response": {"approved": True}},
        {"request_id": asked[1]["request_id"], "response": {"approved": False, "reason": "no"}},
        {"request_id": asked[2]["request_id"], "response": {"approved": True}},
    ]
    # all or none: one bad answer among them records none
    bad = [*answers[:2], {"request_id": asked[2]["request_id"], "response": {"approved": 1}}]
    r = c.post(f"/v1/sessions/{sid}/turns/{tid}/inputs", json={"answers": bad})
    assert r.status_code == 422, r.text
    assert r.json()["errors"][0]["loc"][:3] == ["body", "answers", "2"]
    assert len(c.get(f"/v1/sessions/{sid}/turns/{tid}").json()["pending_inputs"]) == 3
    # another tenant sees no such turn
    r = api.client("b").post(f"/v1/sessions/{sid}/turns/{tid}/inputs", json={"answers": answers})
    assert r.status_code == 404
    r = c.post(f"/v1/sessions/{sid}/turns/{tid}/inputs", json={"answers": answers})
    assert r.status_code == 200, r.text
    assert r.json()["pending_inputs"] == []
    done = _settled(c, sid, tid)
    assert done["state"] == "completed", done
    results = done["result"]["text"].split("|")
    assert "charged" in results[0] and "charged" in results[2]
    assert results[1] == "error: not approved: no"
    assert [_runs(database_url, f"{prefix}/{s}") for s in (2, 3, 4)] == [1, 0, 1]
    resolved = [
        e for e in store.reads.turn_events(api.tenant_a, sid, tid) if e.type == "input.resolved"
    ]
    assert [(e.data["step"], e.data["by"]) for e in resolved] == [
        (2, "alice"),
        (3, "alice"),
        (4, "alice"),
    ]
    assert store.reads.get_turn(api.tenant_a, sid, tid).attempt == 1  # a wait is not a retry
    assert check_all(database_url, tenants=[api.tenant_a]) == []


def test_approvals_answered_one_by_one_resume_the_turn_after_the_last(
    api: Api, procs: Any, store: Any, sid: str, database_url: str
) -> None:
    procs.worker()
    c = api.client()
    tid = _submit(c, sid)
    asked = _waiting(c, sid, tid)["pending_inputs"]
    one, two, three = (f"/v1/sessions/{sid}/turns/{tid}/inputs/{p['request_id']}" for p in asked)
    # out of call order: the middle one first
    r = c.post(two, json={"approved": True})
    assert r.status_code == 200, r.text
    left = r.json()
    assert left["state"] == "waiting"
    assert [p["step"] for p in left["pending_inputs"]] == [2, 4]
    assert left["pending_input"]["step"] == 2
    again = c.post(two, json={"approved": False})
    assert again.status_code == 409 and again.json()["code"] == "input_not_open"
    # an answer naming one answered already records none of the others
    many = {
        "answers": [
            {"request_id": asked[0]["request_id"], "response": {"approved": True}},
            {"request_id": asked[1]["request_id"], "response": {"approved": True}},
        ]
    }
    r = c.post(f"/v1/sessions/{sid}/turns/{tid}/inputs", json=many)
    assert r.status_code == 409 and r.json()["code"] == "input_not_open"
    assert [
        p["step"] for p in c.get(f"/v1/sessions/{sid}/turns/{tid}").json()["pending_inputs"]
    ] == [2, 4]
    # a reader may not answer
    assert api.client("a-reader").post(one, json={"approved": True}).status_code == 403
    assert c.post(one, json={"approved": True}).status_code == 200
    # two of three answered: nothing may run yet, no worker may even start it
    assert store.reads.lane_head(api.tenant_a, sid).runnable is False
    assert c.get(f"/v1/sessions/{sid}/turns/{tid}").json()["state"] == "waiting"
    prefix = f"{api.tenant_a}/{sid}/{tid}"
    assert [_runs(database_url, f"{prefix}/{s}") for s in (2, 3, 4)] == [0, 0, 0]
    assert c.post(three, json={"approved": False}).status_code == 200
    done = _settled(c, sid, tid)
    assert done["state"] == "completed", done
    assert [_runs(database_url, f"{prefix}/{s}") for s in (2, 3, 4)] == [1, 1, 0]
    assert check_all(database_url, tenants=[api.tenant_a]) == []
