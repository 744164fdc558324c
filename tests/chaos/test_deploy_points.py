"""SIGKILL of a build B worker right before and right after the statement that commits
a turn's move to another definition (``turn.definition_changed``), for a turn
admitted under build A that no live worker serves any more (tests/deploys/). Another
build B worker takes over: the turn completes on build B with exactly one move, right
before a model call, and every invariant holds."""

from __future__ import annotations

import signal

import pytest

from tests.chaos.conftest import Chaos, signalled
from tests.chaos.deploys import BUILD_B, admit, definition, moves
from tests.procs import wait_for
from turnkeep.runtime.states import TurnState


@pytest.mark.chaos
@pytest.mark.parametrize("point", ["before_definition_change", "after_definition_change"])
def test_sigkill_around_the_move_then_the_turn_completes_moved_once(
    chaos: Chaos, sid: str, point: str
) -> None:
    chaos.procs.beat()
    victim = chaos.procs.worker(
        {**BUILD_B, "TURNKEEP_FAULTS": f"{point}=kill-once", "TURNKEEP_FAULTS_SESSIONS": sid}
    )
    tid = admit(chaos, "build_a", sid, "support", "tool=count")
    wait_for(signalled(victim, signal.SIGKILL), 30, what=f"worker SIGKILLed at {point}")
    turn = chaos.store.reads.get_turn(chaos.tenant, sid, tid)
    v1, v2 = definition("build_a", "support"), definition("build_b", "support")
    # before: nothing of the move is written; after: the turn is on build B's definition
    expected = v1 if point == "before_definition_change" else v2
    assert turn.agent_hash == expected.definition_hash
    assert len(moves(chaos, sid, tid)) == (0 if point == "before_definition_change" else 1)

    chaos.procs.worker(BUILD_B)
    turn = chaos.wait_terminal(sid, tid, timeout=60)
    assert turn.state is TurnState.COMPLETED, turn.error
    assert turn.agent_hash == v2.definition_hash and turn.agent_version == "2"
    assert turn.result is not None and turn.result["text"] == "answered by support v2"
    (change, after), *more = moves(chaos, sid, tid)
    assert more == [] and after == "model.completed"
    assert (change.from_version, change.to_version, change.reason) == ("1", "2", "not_served")
    assert not chaos.check()
