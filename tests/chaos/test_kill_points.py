"""SIGKILL of the worker process at every named fault point (threads pool: the process
that runs the task is the worker's main process). Beat runs, a healthy worker
replaces the dead one, the turn completes and every invariant holds."""

from __future__ import annotations

import signal
from pathlib import Path

import psycopg
import pytest

from tests.chaos.conftest import Chaos, signalled
from tests.procs import wait_for
from turnkeep.runtime.obs.faults import (
    API_POINTS,
    DEFINITION_POINTS,
    DELEGATION_POINTS,
    DELIVERY_POINTS,
    ERASURE_POINTS,
    EXPERIMENT_POINTS,
    LIMIT_POINTS,
    PACE_POINTS,
    PRUNE_POINTS,
    TOGETHER_POINTS,
    TOOL_STEP_POINTS,
    WAITERS_POINTS,
    FaultPoint,
)
from turnkeep.runtime.states import TurnState

#: how many times the turn was started when the kill came at the point: a kill at
#: ``before_start`` comes before the attempt's first statement lands, and one at
#: ``after_settle`` after the turn settled (tests/chaos/test_fused_statements.py
#: looks closer at both fused statements)
ATTEMPTS = {p.value: 2 for p in FaultPoint} | {
    FaultPoint.BEFORE_START.value: 1,
    FaultPoint.AFTER_SETTLE.value: 1,
}


def tool_calls(database_url: str, key: str) -> list[int]:
    """The pids that ran the tool call whose idempotency key is ``key``."""
    with psycopg.connect(database_url.replace("+psycopg", "")) as conn:
        rows = conn.execute(
            "SELECT pid FROM test_tool_calls WHERE key = %s ORDER BY at", (key,)
        ).fetchall()
    return [r[0] for r in rows]


#: the points a worker reaches (the API's own: test_cancel_points.py, test_answer_points.py;
#: the webhook deliverer's: test_webhook_points.py; ctx.step's and delegation's, which the
#: counter agent never reaches: test_tool_step_points.py, test_delegation_points.py; an
#: experiment's driver's: test_eval_points.py; a rate-limited call's: test_pace_points.py;
#: the erasure's: test_erasure_points.py; a limited start's: test_limit_points.py)
WORKER_POINTS = [
    p.value
    for p in FaultPoint
    if p
    not in API_POINTS
    | DELIVERY_POINTS
    | TOOL_STEP_POINTS
    | DELEGATION_POINTS
    | PRUNE_POINTS
    | DEFINITION_POINTS
    | TOGETHER_POINTS
    | EXPERIMENT_POINTS
    | PACE_POINTS
    | ERASURE_POINTS
    | LIMIT_POINTS
    | WAITERS_POINTS
]


@pytest.mark.chaos
@pytest.mark.parametrize("point", WORKER_POINTS)
def test_sigkill_at_fault_point_then_turn_completes(chaos: Chaos, sid: str, point: str) -> None:
    extra = {"TURNKEEP_FAULTS": f"{point}=kill-once"}
    if point == FaultPoint.IN_LEASE_RENEWAL:
        # renewals come every TTL/3; a slow tool keeps the turn alive past the first
        extra["TURNKEEP_TEST_TOOL_SLEEP"] = "1"
    chaos.procs.beat()
    victim = chaos.procs.worker(extra)
    tid = chaos.admit(sid, "steps=2")
    wait_for(signalled(victim, signal.SIGKILL), 30, what=f"worker SIGKILLed at {point}")
    assert (Path(chaos.procs.env["TURNKEEP_FAULTS_DIR"]) / f"{point}.fired").exists()
    before = chaos.store.reads.turn_events(chaos.tenant, sid, tid)

    chaos.procs.worker()
    turn = chaos.wait_terminal(sid, tid)

    assert turn.state is TurnState.COMPLETED, turn.error
    assert turn.result["text"] == "done after 2 calls, 0 errors"
    assert turn.attempt == ATTEMPTS[point], (point, turn.attempt)
    events = chaos.store.reads.turn_events(chaos.tenant, sid, tid)
    assert events[: len(before)] == before  # nothing committed before the kill changed
    started = [e for e in events if e.type == "turn.started"]
    assert [e.data["attempt"] for e in started] == list(range(1, turn.attempt + 1))
    fences = [e.fence for e in started]
    assert fences == sorted(set(fences)), fences  # each attempt under a newer fence
    pids = tool_calls(chaos.database_url, f"{chaos.tenant}/{sid}/{tid}/2")
    if point == FaultPoint.AFTER_TOOL_EFFECT:
        # the victim ran the first count call; the rerun used the same key
        assert len(pids) == 2 and pids[0] == victim.pid != pids[1], pids
    elif point == FaultPoint.BEFORE_TOOL_EFFECT:
        assert len(pids) == 1 and pids[0] != victim.pid, pids
    assert chaos.check() == []
