"""Kill the worker right before and right after each fused statement, and check what
the crash left behind is exactly what docs/guarantees.md says it may leave:

``start_turn``     claims the fence and starts the attempt (turn.started) in one
                   statement: before it nothing of the attempt exists; after it the
                   attempt is started and a takeover starts another one.
``fenced_append``  with a terminal event: the final ``model.completed`` and
                   ``turn.completed`` in one statement: before it neither exists (the
                   call is made again), after it both do and the turn is settled.

Each case then lets a healthy worker (and beat) finish the lane and checks the
invariants. The lane has a second turn queued behind the first, so a crash while the
lease is held (after_settle) must not strand it.
"""

from __future__ import annotations

import signal

import pytest

from tests.chaos.conftest import Chaos, signalled
from tests.procs import wait_for
from turnkeep.runtime.obs.faults import FaultPoint
from turnkeep.runtime.states import TurnState


def _types(chaos: Chaos, sid: str, tid: str) -> list[str]:
    return [e.type for e in chaos.store.reads.turn_events(chaos.tenant, sid, tid)]


@pytest.mark.chaos
@pytest.mark.parametrize(
    "point",
    [
        FaultPoint.BEFORE_START,
        FaultPoint.AFTER_START,
        FaultPoint.BEFORE_SETTLE,
        FaultPoint.AFTER_SETTLE,
    ],
)
def test_sigkill_around_a_fused_statement(chaos: Chaos, sid: str, point: FaultPoint) -> None:
    chaos.procs.beat()
    victim = chaos.procs.worker({"TURNKEEP_FAULTS": f"{point.value}=kill-once"})
    first = chaos.admit(sid, "steps=1")
    second = chaos.admit(sid, "steps=1")
    wait_for(signalled(victim, signal.SIGKILL), 30, what=f"worker SIGKILLed at {point}")

    left = _types(chaos, sid, first)
    fence = chaos.store.reads.get_session(chaos.tenant, sid).fence
    if point is FaultPoint.BEFORE_START:
        # nothing of the attempt: not even the fence claim landed
        assert left == ["turn.accepted"] and fence == 0
    elif point is FaultPoint.AFTER_START:
        # the claim and the attempt landed together; no step yet
        assert left == ["turn.accepted", "turn.started"] and fence > 0
    elif point is FaultPoint.BEFORE_SETTLE:
        # every step but the final one; no terminal event
        assert left == [
            "turn.accepted",
            "turn.started",
            "model.completed",
            "tool.completed",
        ]
    else:
        # the final outcome and the settlement, one statement: both or neither
        assert left[-2:] == ["model.completed", "turn.completed"]
        assert chaos.store.reads.get_turn(chaos.tenant, sid, first).state is TurnState.COMPLETED
    assert _types(chaos, sid, second) == ["turn.accepted"]

    chaos.procs.worker()
    done = [chaos.wait_terminal(sid, t) for t in (first, second)]
    assert [t.state for t in done] == [TurnState.COMPLETED] * 2, [t.error for t in done]
    attempts = 1 if point in (FaultPoint.BEFORE_START, FaultPoint.AFTER_SETTLE) else 2
    assert done[0].attempt == attempts and done[1].attempt == 1
    events = chaos.store.reads.turn_events(chaos.tenant, sid, first)
    assert [e.type for e in events].count("turn.completed") == 1
    started = [e for e in events if e.type == "turn.started"]
    assert [e.fence for e in started] == sorted({e.fence for e in started})
    assert chaos.check() == []
