"""Kill the API right before and right after the statement that cancels a turn no
worker is stepping (request_cancel settling a queued turn), and check what a
client sees when it asks again: before, nothing happened and the retry cancels;
after, the turn is cancelled and the retry answers 409 ``turn_not_active``. Either
way the session is not wedged: the turn queued behind runs to completion (the
enqueue the killed API never sent is the recovery scan's), and the invariants hold.
"""

from __future__ import annotations

import signal

import httpx
import pytest

from tests.chaos.conftest import Chaos, signalled
from tests.procs import wait_for
from turnkeep.runtime.obs.faults import FaultPoint
from turnkeep.runtime.states import TurnState


@pytest.mark.chaos
@pytest.mark.parametrize("point", [FaultPoint.BEFORE_CANCEL, FaultPoint.AFTER_CANCEL])
def test_sigkill_around_the_api_cancellation(chaos: Chaos, sid: str, point: FaultPoint) -> None:
    victim = chaos.api({"TURNKEEP_FAULTS": f"{point.value}=kill-once"})
    first = chaos.admit(sid, "steps=1")
    second = chaos.admit(sid, "steps=1")
    url = f"{victim.url}/v1/sessions/{sid}/turns/{first}/cancel"
    with pytest.raises(httpx.TransportError):
        httpx.post(url, headers=victim.headers, timeout=60)
    wait_for(signalled(victim.proc, signal.SIGKILL), 60, what=f"api SIGKILLed at {point}")

    state = chaos.store.reads.get_turn(chaos.tenant, sid, first).state
    types = [e.type for e in chaos.store.reads.turn_events(chaos.tenant, sid, first)]
    if point is FaultPoint.BEFORE_CANCEL:
        assert state is TurnState.QUEUED and types == ["turn.accepted"]
    else:
        # one statement: the request and the settlement landed together
        assert state is TurnState.CANCELLED
        assert types == ["turn.accepted", "turn.cancel_requested", "turn.cancelled"]

    api = chaos.api()
    again = httpx.post(
        f"{api.url}/v1/sessions/{sid}/turns/{first}/cancel", headers=api.headers, timeout=60
    )
    if point is FaultPoint.BEFORE_CANCEL:
        assert again.status_code == 202 and again.json()["state"] == "cancelled", again.text
    else:
        assert again.status_code == 409 and again.json()["code"] == "turn_not_active"

    chaos.procs.beat()
    chaos.procs.worker()
    assert chaos.wait_terminal(sid, second).state is TurnState.COMPLETED
    assert chaos.store.reads.get_turn(chaos.tenant, sid, first).state is TurnState.CANCELLED
    assert chaos.check() == []
