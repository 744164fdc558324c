"""SIGKILL the worker between two of the requests of approvals asked together
(``between_group_asks``: one request committed, the next not), and check that the next
attempt keeps the requests asked already and asks the rest, in one wait: three
requests, each once, answered in one POST; each approved call then runs exactly once
and the invariants hold."""

from __future__ import annotations

import signal

import httpx
import psycopg
import pytest

from tests.chaos.conftest import Chaos, signalled
from tests.procs import wait_for
from turnkeep.runtime.obs.faults import FaultPoint
from turnkeep.runtime.states import TurnState


def _runs(database_url: str, key: str) -> int:
    with psycopg.connect(database_url.replace("+psycopg", "")) as conn:
        row = conn.execute("SELECT count(*) FROM test_tool_calls WHERE key = %s", (key,)).fetchone()
    assert row is not None
    return int(row[0])


@pytest.mark.chaos
def test_sigkill_between_the_requests_of_one_wait(chaos: Chaos, sid: str) -> None:
    point = FaultPoint.BETWEEN_GROUP_ASKS
    chaos.procs.beat()
    victim = chaos.procs.worker({"TURNKEEP_FAULTS": f"{point.value}=kill-once"})
    tid = chaos.admit(sid, "pay them", agent="payroll")
    wait_for(signalled(victim, signal.SIGKILL), 30, what=f"worker SIGKILLed at {point}")
    cut = [e for e in chaos.store.reads.turn_events(chaos.tenant, sid, tid)]
    assert [e.type for e in cut].count("input.requested") == 1
    assert chaos.store.reads.get_turn(chaos.tenant, sid, tid).state is TurnState.RUNNING

    chaos.procs.worker()
    wait_for(
        lambda: chaos.store.reads.get_turn(chaos.tenant, sid, tid).state is TurnState.WAITING,
        60,
        what="turn waiting on the whole group",
    )
    events = chaos.store.reads.turn_events(chaos.tenant, sid, tid)
    requested = [e for e in events if e.type == "input.requested"]
    assert [e.step for e in requested] == [2, 3, 4]
    # the one asked before the crash is kept as it was, not asked again
    assert requested[0].seq == next(e.seq for e in cut if e.type == "input.requested")
    assert [e.type for e in events].count("model.completed") == 1

    api = chaos.api()
    turn = httpx.get(
        f"{api.url}/v1/sessions/{sid}/turns/{tid}", headers=api.headers, timeout=30
    ).json()
    assert [p["step"] for p in turn["pending_inputs"]] == [2, 3, 4]
    answers = [
        {"request_id": p["request_id"], "response": {"approved": True}}
        for p in turn["pending_inputs"]
    ]
    r = httpx.post(
        f"{api.url}/v1/sessions/{sid}/turns/{tid}/inputs",
        json={"answers": answers},
        headers=api.headers,
        timeout=30,
    )
    assert r.status_code == 200, r.text
    done = chaos.wait_terminal(sid, tid)
    assert done.state is TurnState.COMPLETED, done.error
    prefix = f"{chaos.tenant}/{sid}/{tid}"
    assert [_runs(chaos.database_url, f"{prefix}/{s}") for s in (2, 3, 4)] == [1, 1, 1]
    assert chaos.check() == []
