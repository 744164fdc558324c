"""SIGKILL around a limited start (store/max_running.py): at ``limit_lock_held`` (the
tenant's limit lock taken, nothing counted or started) and at
``after_limited_start`` (the head started, the lock not given back). The lock is the
victim's connection's: Postgres gives it back as the connection dies, so the healthy
worker's limited starts go on; the limit of 1 is never overrun (the journal says), and
every turn completes once."""

from __future__ import annotations

import signal

import pytest

from tests.chaos.conftest import Chaos, signalled
from tests.procs import wait_for
from tests.running import most_at_once, running_spans
from turnkeep.runtime.obs.faults import LIMIT_POINTS
from turnkeep.runtime.states import TurnState

#: the victim's turn's attempts: killed before its start landed, or after
ATTEMPTS = {"limit_lock_held": 1, "after_limited_start": 2}


@pytest.mark.chaos
@pytest.mark.parametrize("point", sorted(p.value for p in LIMIT_POINTS))
def test_sigkill_around_a_limited_start(chaos: Chaos, sid: str, point: str) -> None:
    chaos.store.max_running.set_limits(chaos.tenant, max_running=1, updated_by="chaos")
    chaos.procs.beat()
    victim = chaos.procs.worker(
        {"TURNKEEP_FAULTS": f"{point}=kill-once", "TURNKEEP_FAULTS_SESSIONS": sid}
    )
    first = chaos.admit(sid, "steps=2")
    wait_for(signalled(victim, signal.SIGKILL), 30, what=f"worker SIGKILLed at {point}")
    others = [chaos.admit(f"{sid}-{i}", "steps=1") for i in range(2)]
    chaos.procs.worker()
    turn = chaos.wait_terminal(sid, first, timeout=120)
    assert turn.state is TurnState.COMPLETED, turn.error
    assert turn.attempt == ATTEMPTS[point], (point, turn.attempt)
    chaos.wait_all_terminal()
    for (tenant, s, tid), _ in zip(chaos.accepted[1:], others, strict=True):
        assert chaos.store.reads.get_turn(tenant, s, tid).state is TurnState.COMPLETED
    spans = running_spans(chaos.store, chaos.accepted)
    assert most_at_once(spans) == 1, spans
    assert chaos.check() == []
