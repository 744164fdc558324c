"""SIGSTOP of the worker at a fault point (stop-once) for longer than the lease TTL,
a takeover by another worker, then SIGCONT: the stale holder's writes are rejected
and after the takeover the journal holds only the new holder's steps.

(The tool-call case is tests/integration/test_worker.py; these stop the worker
elsewhere: right after a model call, before a commit is sent, inside a renewal.)
"""

from __future__ import annotations

import signal

import pytest

from tests.chaos.conftest import Chaos
from tests.procs import proc_state, wait_for
from turnkeep.runtime.states import TurnState


@pytest.mark.chaos
@pytest.mark.parametrize("point", ["after_model_call", "before_commit", "in_lease_renewal"])
def test_sigstop_past_ttl_at_point_then_stale_writes_rejected(
    chaos: Chaos, sid: str, point: str
) -> None:
    stale = chaos.procs.worker(
        {"TURNKEEP_FAULTS": f"{point}=stop-once", "TURNKEEP_TEST_TOOL_SLEEP": "0.5"}
    )
    chaos.procs.beat()
    tid = chaos.admit(sid, "steps=3")
    wait_for(lambda: proc_state(stale.pid) == "T", 30, what=f"worker stopped at {point}")
    stale_fence = chaos.store.reads.get_session(chaos.tenant, sid).fence

    chaos.procs.worker()
    wait_for(
        lambda: chaos.store.reads.get_session(chaos.tenant, sid).fence > stale_fence,
        30,
        what="takeover under a newer fence",
    )
    turn = chaos.wait_terminal(sid, tid)
    settled = chaos.store.reads.turn_events(chaos.tenant, sid, tid)
    stale.signal(signal.SIGCONT)
    # the stale worker wakes up where it stopped and tries to go on
    wait_for(lambda: "lease lost" in stale.text().lower(), 30, what="stale worker stops")

    assert turn.state is TurnState.COMPLETED, turn.error
    assert turn.result["text"] == "done after 3 calls, 0 errors"
    events = chaos.store.reads.turn_events(chaos.tenant, sid, tid)
    assert events == settled  # nothing the stale worker tried after SIGCONT landed
    new_fence = chaos.store.reads.get_session(chaos.tenant, sid).fence
    # the takeover's fence; the session's may have gone on since (a later claim that
    # found the lane idle, under load), never back
    takeover = next(e for e in events if e.type == "turn.started" and e.fence > stale_fence)
    assert takeover.fence <= new_fence
    after = [e for e in events if e.seq >= takeover.seq]
    assert {e.fence for e in after} == {takeover.fence}, [(e.seq, e.type, e.fence) for e in after]
    assert {e.fence for e in events if e.seq < takeover.seq} <= {0, stale_fence}
    assert chaos.check() == []
