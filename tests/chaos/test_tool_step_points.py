"""SIGKILL of the worker around the record of a tool's first ``ctx.step``
(tests/agents.py ``two_steps``: steps ``first`` and ``second``, each logging a row per
run of its function), then recovery by another worker:

``before_tool_step_record``  ``first`` ran, its result is not recorded: the rerun runs
                             it again (at least once) and records the rerun's result.
``after_tool_step_record``   ``first`` is recorded, ``second`` has not run: the rerun
                             gets ``first``'s recorded result back without running it.

Either way ``second`` runs once, on the rerun, the turn completes and every invariant
holds (docs/tool-steps.md)."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest

from tests.chaos.conftest import Chaos, signalled
from tests.chaos.test_kill_points import tool_calls
from tests.procs import wait_for
from turnkeep.runtime.obs.faults import FaultPoint
from turnkeep.runtime.states import TurnState


@pytest.mark.chaos
@pytest.mark.parametrize(
    "point", [FaultPoint.BEFORE_TOOL_STEP_RECORD, FaultPoint.AFTER_TOOL_STEP_RECORD]
)
def test_sigkill_around_a_step_record_then_each_step_is_recorded_once(
    chaos: Chaos, sid: str, point: FaultPoint
) -> None:
    chaos.procs.beat()
    victim = chaos.procs.worker({"TURNKEEP_FAULTS": f"{point.value}=kill-once"})
    tid = chaos.admit(sid, "go", agent="stepper")
    wait_for(signalled(victim, signal.SIGKILL), 30, what=f"worker SIGKILLed at {point}")
    assert (Path(chaos.procs.env["TURNKEEP_FAULTS_DIR"]) / f"{point.value}.fired").exists()
    key = f"{chaos.tenant}/{sid}/{tid}/2"
    # the kill came at the first step's record: the second never ran on the victim
    assert tool_calls(chaos.database_url, f"{key}#first") == [victim.pid]
    assert tool_calls(chaos.database_url, f"{key}#second") == []
    recorded = chaos.store.tool_steps.get_tool_step(chaos.tenant, sid, tid, 2, "first")
    if point is FaultPoint.BEFORE_TOOL_STEP_RECORD:
        assert recorded is None
    else:
        assert recorded is not None and recorded.result["pid"] == victim.pid

    survivor = chaos.procs.worker()
    turn = chaos.wait_terminal(sid, tid)

    assert turn.state is TurnState.COMPLETED, turn.error
    assert turn.attempt == 2
    first_runs = tool_calls(chaos.database_url, f"{key}#first")
    if point is FaultPoint.BEFORE_TOOL_STEP_RECORD:
        # unrecorded, so run again (at least once), and the rerun's result recorded
        assert first_runs == [victim.pid, survivor.pid]
        first_by = survivor.pid
    else:
        # recorded: its result came back to the rerun, which did not run it
        assert first_runs == [victim.pid]
        first_by = victim.pid
    assert tool_calls(chaos.database_url, f"{key}#second") == [survivor.pid]
    first = chaos.store.tool_steps.get_tool_step(chaos.tenant, sid, tid, 2, "first")
    second = chaos.store.tool_steps.get_tool_step(chaos.tenant, sid, tid, 2, "second")
    assert first.result == {"step": "first", "pid": first_by}
    assert second.result == {"step": "second", "pid": survivor.pid}
    events = chaos.store.reads.turn_events(chaos.tenant, sid, tid)
    (completed,) = [e for e in events if e.type == "tool.completed"]
    assert json.loads(completed.data["message"]["content"]) == {
        "first": first.result,
        "second": second.result,
    }
    assert chaos.check() == []
