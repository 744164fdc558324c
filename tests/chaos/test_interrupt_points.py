"""Kill the API right before and right after the transaction of an interrupting
admission (``multitask=interrupt``: lock_session, admit_turn, interrupt_lane) and
check what a client sees when it sends the same Idempotency-Key again: before,
nothing was admitted and nothing cancelled, and the retry admits and interrupts;
after, the admission and the cancellations landed together, and the replay answers
200 and cancels nothing more (not even a turn queued since). Either way the lane
moves on to the new turn (the enqueue the killed API never sent is the recovery
scan's), and the invariants hold.
"""

from __future__ import annotations

import signal
from typing import Any

import httpx
import pytest

from tests.chaos.conftest import Chaos, signalled, turn_body
from tests.procs import wait_for
from turnkeep.runtime.obs.faults import FaultPoint
from turnkeep.runtime.states import TurnState

NEWEST = "newest"


def _interrupt(url: str, headers: dict[str, str], sid: str) -> httpx.Response:
    body: dict[str, Any] = {**turn_body("steps=1"), "multitask": "interrupt"}
    return httpx.post(
        f"{url}/v1/sessions/{sid}/turns",
        json=body,
        headers={**headers, "Idempotency-Key": NEWEST},
        timeout=60,
    )


@pytest.mark.chaos
@pytest.mark.parametrize("point", [FaultPoint.BEFORE_INTERRUPT, FaultPoint.AFTER_INTERRUPT])
def test_sigkill_around_the_interrupting_admission(
    chaos: Chaos, sid: str, point: FaultPoint
) -> None:
    victim = chaos.api({"TURNKEEP_FAULTS": f"{point.value}=kill-once"})
    older = [chaos.admit(sid, "steps=1"), chaos.admit(sid, "steps=1")]  # no worker: queued
    with pytest.raises(httpx.TransportError):
        _interrupt(victim.url, victim.headers, sid)
    wait_for(signalled(victim.proc, signal.SIGKILL), 60, what=f"api SIGKILLed at {point}")

    store, tenant = chaos.store, chaos.tenant
    cancelled = ["turn.accepted", "turn.cancel_requested", "turn.cancelled"]
    if point is FaultPoint.BEFORE_INTERRUPT:
        assert [t.turn_id for t in store.reads.list_turns(tenant, sid)] == older
        assert all(store.reads.get_turn(tenant, sid, t).state is TurnState.QUEUED for t in older)
        assert store.reads.get_session(tenant, sid).head_seq == 2
    else:
        # one transaction: the admission and both cancellations landed together
        assert store.reads.get_turn(tenant, sid, NEWEST).state is TurnState.QUEUED
        for tid in older:
            events = store.reads.turn_events(tenant, sid, tid)
            assert [e.type for e in events] == cancelled
            assert events[-1].data == {"by": "chaos", "reason": "interrupted", "by_turn": NEWEST}
        assert store.reads.get_session(tenant, sid).head_seq == 7
        later = chaos.admit(sid, "steps=1")  # queued behind the new turn

    api = chaos.api()
    again = _interrupt(api.url, api.headers, sid)
    chaos.accepted.append((tenant, sid, NEWEST))
    if point is FaultPoint.BEFORE_INTERRUPT:
        assert again.status_code == 202, again.text
        assert again.json()["accepted_seq"] == 3
        assert store.reads.get_session(tenant, sid).head_seq == 7
    else:
        assert again.status_code == 200, again.text
        assert store.reads.get_session(tenant, sid).head_seq == 8  # later's turn.accepted only
        assert [e.type for e in store.reads.turn_events(tenant, sid, later)] == ["turn.accepted"]
    for tid in older:
        assert [e.type for e in store.reads.turn_events(tenant, sid, tid)] == cancelled

    chaos.procs.beat()
    chaos.procs.worker()
    assert chaos.wait_terminal(sid, NEWEST).state is TurnState.COMPLETED
    if point is FaultPoint.AFTER_INTERRUPT:
        assert chaos.wait_terminal(sid, later).state is TurnState.COMPLETED
    assert all(store.reads.get_turn(tenant, sid, t).state is TurnState.CANCELLED for t in older)
    assert chaos.check() == []
