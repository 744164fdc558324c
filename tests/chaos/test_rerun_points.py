"""Kill the API right before and right after the transaction that admits a rerun (its
turn and the outcomes it reuses, Store.reruns.admit_rerun), and check what a client sees when
it asks again: before, nothing was written and the retry admits it (202); after, the
rerun is there and the retry is its replay (200). Either way the rerun runs once (the
enqueue a killed API never sent is the recovery scan's), reuses the source's steps
without running their tool again, runs its own once, and the invariants hold.
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
@pytest.mark.parametrize("point", [FaultPoint.BEFORE_RERUN, FaultPoint.AFTER_RERUN])
def test_sigkill_around_the_rerun_admission(chaos: Chaos, sid: str, point: FaultPoint) -> None:
    chaos.procs.beat()
    chaos.procs.worker()
    src = chaos.admit(sid, "steps=2")
    assert chaos.wait_terminal(sid, src).state is TurnState.COMPLETED
    path = f"/v1/sessions/{sid}/turns/{src}/rerun"
    headers = {"Idempotency-Key": "rr"}

    victim = chaos.api({"TURNKEEP_FAULTS": f"{point.value}=kill-once"})
    with pytest.raises(httpx.TransportError):
        httpx.post(
            victim.url + path,
            json={"from_step": 3},
            headers={**victim.headers, **headers},
            timeout=60,
        )
    wait_for(signalled(victim.proc, signal.SIGKILL), 60, what=f"api SIGKILLed at {point}")
    turns = {t.turn_id for t in chaos.store.reads.list_turns(chaos.tenant, sid)}
    assert turns == ({src} if point is FaultPoint.BEFORE_RERUN else {src, "rr"})

    api = chaos.api()
    again = httpx.post(
        api.url + path, json={"from_step": 3}, headers={**api.headers, **headers}, timeout=60
    )
    assert again.status_code == (202 if point is FaultPoint.BEFORE_RERUN else 200), again.text
    assert again.json()["rerun_of"]["turn_id"] == src
    chaos.accepted.append((chaos.tenant, sid, "rr"))

    turn = chaos.wait_terminal(sid, "rr")
    assert turn.state is TurnState.COMPLETED, turn.error
    steps = [
        (e.type, e.step) for e in chaos.store.reads.turn_events(chaos.tenant, sid, "rr") if e.step
    ]
    assert steps == [
        ("model.completed", 1),
        ("tool.completed", 2),
        ("model.completed", 3),
        ("tool.completed", 4),
        ("model.completed", 5),
    ]
    # the source's two counts, the rerun's own one (step 4) and not its reused step 2
    assert _tool_runs(chaos.database_url, f"{chaos.tenant}/{sid}/{src}/") == 2
    assert _tool_runs(chaos.database_url, f"{chaos.tenant}/{sid}/rr/") == 1
    assert chaos.check() == []
