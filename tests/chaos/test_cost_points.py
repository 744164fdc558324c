"""A cost bound counts a call that a crash cut short (runtime/plan.py ``lost_tries``):
SIGKILL right after the model answered, before its outcome was committed; the next
attempt makes the call again and is charged for both ($5 each, tests/agents.py
``spender`` with a $12 bound): the turn stops one call sooner than it would have."""

from __future__ import annotations

import signal

import pytest

from tests.chaos.conftest import Chaos, signalled
from tests.procs import wait_for
from turnkeep.runtime.states import TurnState


@pytest.mark.chaos
def test_a_call_cut_short_by_a_sigkill_is_charged_again(chaos: Chaos, sid: str) -> None:
    chaos.procs.beat()
    victim = chaos.procs.worker({"TURNKEEP_FAULTS": "after_model_call=kill-once"})
    tid = chaos.admit(sid, "steps=10", agent="spender")
    wait_for(signalled(victim, signal.SIGKILL), 30, what="worker SIGKILLed after the call")
    chaos.procs.worker()
    turn = chaos.wait_terminal(sid, tid)

    assert turn.state is TurnState.FAILED and turn.error["code"] == "budget_exceeded"
    calls = [
        e
        for e in chaos.store.reads.turn_events(chaos.tenant, sid, tid)
        if e.type == "model.completed"
    ]
    first = calls[0].data
    assert first["lost_tries"] == 1
    assert first["cost"] == pytest.approx(5.0, abs=1e-3)
    assert first["charged_cost"] == pytest.approx(10.0, abs=1e-3)
    # $10 + $5 passes $12 after two calls, where an uncut turn makes three
    assert len(calls) == 2
    assert turn.usage["cost_usd"] == pytest.approx(15.0, abs=1e-3)
    assert chaos.check() == []
