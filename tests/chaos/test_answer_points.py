"""Kill the API right before and right after the statement that records the answer to
a reconciliation request (resolve_input on a turn parked in needs_reconciliation),
and check what a client sees when it answers again: before, nothing was recorded and
the retry is accepted; after, the answer landed and the retry is 409
``input_not_open``. Either way the parked turn moves on (the enqueue the killed API
never sent is the recovery scan's), the tool the answer said never ran runs exactly
once, and the invariants hold.
"""

from __future__ import annotations

import signal

import httpx
import psycopg
import pytest

from tests.chaos.conftest import Chaos, signalled
from tests.procs import wait_for
from turnkeep.runtime.obs.faults import FaultPoint
from turnkeep.runtime.states import TurnState


def _tool_runs(database_url: str, prefix: str) -> int:
    with psycopg.connect(database_url.replace("+psycopg", "")) as conn:
        row = conn.execute(
            "SELECT count(*) FROM test_tool_calls WHERE key LIKE %s", (prefix + "%",)
        ).fetchone()
    assert row is not None
    return int(row[0])


@pytest.mark.chaos
@pytest.mark.parametrize("point", [FaultPoint.BEFORE_ANSWER, FaultPoint.AFTER_ANSWER])
def test_sigkill_around_the_api_answer(chaos: Chaos, sid: str, point: FaultPoint) -> None:
    chaos.procs.beat()
    tid = chaos.admit(sid, "steps=1", agent="charger-reconcile")
    doomed = chaos.procs.worker(
        {"TURNKEEP_FAULTS": "before_tool_effect=kill-once"}, wait_ready=False
    )
    wait_for(lambda: not doomed.alive(), 30, what="worker killed before the charge")
    chaos.procs.worker()
    wait_for(
        lambda: (
            chaos.store.reads.get_turn(chaos.tenant, sid, tid).state
            is TurnState.NEEDS_RECONCILIATION
        ),
        60,
        what="turn parked for reconciliation",
    )
    pending = chaos.store.reads.get_turn(chaos.tenant, sid, tid).pending_input
    assert pending is not None and pending.kind == "reconciliation"
    path = f"/v1/sessions/{sid}/turns/{tid}/inputs/{pending.request_id}"
    body = {"outcome": "not_executed"}

    victim = chaos.api({"TURNKEEP_FAULTS": f"{point.value}=kill-once"})
    with pytest.raises(httpx.TransportError):
        httpx.post(victim.url + path, json=body, headers=victim.headers, timeout=60)
    wait_for(signalled(victim.proc, signal.SIGKILL), 60, what=f"api SIGKILLed at {point}")

    types = [e.type for e in chaos.store.reads.turn_events(chaos.tenant, sid, tid)]
    if point is FaultPoint.BEFORE_ANSWER:
        assert types[-1] == "input.requested"
    else:
        assert types[-1] == "input.resolved"

    api = chaos.api()
    again = httpx.post(api.url + path, json=body, headers=api.headers, timeout=60)
    if point is FaultPoint.BEFORE_ANSWER:
        assert again.status_code == 200, again.text
    else:
        assert again.status_code == 409 and again.json()["code"] == "input_not_open"

    turn = chaos.wait_terminal(sid, tid)
    assert turn.state is TurnState.COMPLETED, turn.error
    assert _tool_runs(chaos.database_url, f"{chaos.tenant}/{sid}/{tid}/") == 1
    assert chaos.check() == []
