"""Durable timers (issue 26, runtime/timers.py) with real workers, beat and the API: a
tool call that sleeps parks its turn on a ``timer`` request holding no worker and no
lease; the recovery scan wakes it within one scan interval of its time, across a
worker SIGKILL in between; nobody can answer it; a sleeping turn cancels at once."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import httpx
import pytest

from tests.integration.api_server import Api, serve_api
from tests.invariants import check_all
from tests.procs import wait_for
from turnkeep.runtime.states import TurnState

#: the tests' scan interval (tests/conftest.py WORKER_ENV), and what a busy machine adds
SCAN_INTERVAL, SLACK = 1.0, 1.5


@pytest.fixture(scope="module")
def api(service_env: dict[str, str]) -> Iterator[Api]:
    with serve_api(
        service_env, agents="tests.agents", broker_url=service_env["TURNKEEP_REDIS_URL"]
    ) as handle:
        yield handle


def _submit(c: httpx.Client, sid: str, text: str) -> str:
    r = c.post(
        f"/v1/sessions/{sid}/turns",
        json={"agent": "sleeper", "input": [{"role": "user", "content": text}]},
    )
    assert r.status_code == 202, r.text
    return str(r.json()["turn_id"])


def _sleeping(c: httpx.Client, sid: str, tid: str) -> dict[str, Any]:
    def get() -> dict[str, Any] | None:
        t: dict[str, Any] = c.get(f"/v1/sessions/{sid}/turns/{tid}").json()
        return t if t["state"] == "waiting" else None

    found: dict[str, Any] = wait_for(get, 30, what="turn asleep")
    return found


def _lease_free(database_url: str, redis_url: str, tenant: str, sid: str) -> bool:
    import redis

    from turnkeep.store.keys import lease_key

    client = redis.Redis.from_url(redis_url)
    try:
        return not client.exists(lease_key(tenant, sid))
    finally:
        client.close()


def test_a_timer_wakes_its_turn_within_a_scan_interval_across_a_worker_restart(
    api: Api, procs: Any, store: Any, sid: str, database_url: str, redis_url: str
) -> None:
    procs.beat()
    victim = procs.worker()
    c = api.client()
    tid = _submit(c, sid, "nap=5")
    turn = _sleeping(c, sid, tid)
    pending = turn["pending_input"]
    assert (pending["kind"], pending["tool"]["name"]) == ("timer", "nap")
    assert pending["answered_by"] == {"runtime": "runtime"}
    wake_at = datetime.fromisoformat(pending["detail"]["wake_at"])
    # nobody but the runtime answers a timer
    path = f"/v1/sessions/{sid}/turns/{tid}/inputs/{pending['request_id']}"
    refused = c.post(path, json={"woken": True})
    assert refused.status_code == 403 and refused.json()["code"] == "input_forbidden"
    # asleep: no lease held, no worker stepping it; then that worker dies
    assert store.reads.lane_head(api.tenant_a, sid).runnable is False
    assert _lease_free(database_url, redis_url, api.tenant_a, sid)
    victim.signal(signal.SIGKILL)
    wait_for(lambda: not victim.alive(), 10, what="the worker gone")
    procs.worker()

    def settled() -> Any:
        t = store.reads.get_turn(api.tenant_a, sid, tid)
        return t if t.state.terminal else None

    done = wait_for(settled, 30, interval=0.1, what="turn woken and settled")
    assert done.state is TurnState.COMPLETED, done.error
    assert done.result["text"] == 'woke: {"waited_seconds": 5.0}'
    events = store.reads.turn_events(api.tenant_a, sid, tid)
    [woke] = [e for e in events if e.type == "input.resolved"]
    assert woke.data["response"] == {"woken": True} and woke.data["by"] == "recovery"
    late = (woke.created_at - wake_at).total_seconds()
    assert 0 <= late <= SCAN_INTERVAL + SLACK, late
    # the tool ran twice: asked to sleep, then woken; one outcome
    assert [e.type for e in events].count("tool.completed") == 1
    waits = c.get(f"/v1/sessions/{sid}/turns/{tid}/timeline").json()["waits"]
    assert [(w["kind"], w["outcome"], w["answered_by"]) for w in waits] == [
        ("timer", "woken", "recovery")
    ]
    assert check_all(database_url, tenants=[api.tenant_a]) == []


def test_a_sleeping_turn_cancels_at_once_and_is_never_woken(
    api: Api, procs: Any, store: Any, sid: str, database_url: str
) -> None:
    procs.beat()
    procs.worker()
    c = api.client()
    tid = _submit(c, sid, "nap=1")
    _sleeping(c, sid, tid)
    # a witness in another session, asleep until after the cancelled one's time
    witness_sid = f"{sid}-w"
    witness = _submit(c, witness_sid, "nap=2")
    _sleeping(c, witness_sid, witness)
    r = c.post(f"/v1/sessions/{sid}/turns/{tid}/cancel")
    assert r.status_code == 202 and r.json()["state"] == "cancelled", r.text
    after = len(store.reads.turn_events(api.tenant_a, sid, tid))
    # once the scan woke the witness, it had passed the cancelled one's time too
    wait_for(
        lambda: store.reads.get_turn(api.tenant_a, witness_sid, witness).state.terminal,
        30,
        what="the witness woken",
    )
    assert len(store.reads.turn_events(api.tenant_a, sid, tid)) == after
    assert store.reads.get_turn(api.tenant_a, sid, tid).state is TurnState.CANCELLED
    assert check_all(database_url, tenants=[api.tenant_a]) == []
