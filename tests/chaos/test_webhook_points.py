"""SIGKILL of the worker that settles a workflow node's turn and delivers its webhook,
between the turn's commit and the delivery being recorded: right after the settling
commit (the prompt delivery never sent), after the claim (nothing posted), and after
the receiver acknowledged (the acknowledgement never recorded). A new worker and beat
deliver it anyway: at least once, the same delivery id on every attempt, each
signature valid, and recorded as delivered."""

from __future__ import annotations

import signal
import uuid

import httpx
import pytest

from tests.chaos.conftest import Chaos, signalled
from tests.procs import wait_for
from tests.webhook_receiver import Receiver
from turnkeep.runtime import webhooks
from turnkeep.runtime.obs.faults import FaultPoint
from turnkeep.runtime.states import TurnState

SECRET = "whsec-" + uuid.uuid4().hex
#: a claim's lease is 3 x timeout + 5 s: a killed deliverer's claim runs out in 8 s
DELIVERY_ENV = {
    "TURNKEEP_WEBHOOK_SECRET": SECRET,
    # the receiver listens on 127.0.0.1: a deployment refuses that unless it allows it
    "TURNKEEP_WEBHOOK_ALLOW_PRIVATE": "1",
    "TURNKEEP_WEBHOOK_TIMEOUT": "1",
    "TURNKEEP_WEBHOOK_INTERVAL": "0.5",
    "TURNKEEP_WEBHOOK_BACKOFF": "0.3",
}
#: acknowledged POSTs the receiver sees: the kill after the acknowledgement repeats one
ACKED = {
    FaultPoint.AFTER_SETTLE: 1,
    FaultPoint.BEFORE_DELIVERY: 1,
    FaultPoint.AFTER_DELIVERY: 2,
}


@pytest.mark.chaos
@pytest.mark.parametrize("point", list(ACKED))
def test_sigkill_between_the_settling_commit_and_the_recorded_delivery(
    chaos: Chaos, point: FaultPoint
) -> None:
    api = chaos.api(DELIVERY_ENV)
    chaos.procs.beat(DELIVERY_ENV)
    victim = chaos.procs.worker({**DELIVERY_ENV, "TURNKEEP_FAULTS": f"{point.value}=kill-once"})
    run_id = f"run-{uuid.uuid4().hex[:8]}"
    with Receiver() as rx:
        r = httpx.post(
            f"{api.url}/v1/workflows/{run_id}/nodes/n1/turns",
            json={
                "agent": "counter",
                "input": [{"role": "user", "content": "steps=1"}],
                "callback_url": rx.url,
            },
            headers=api.headers,
            timeout=60,
        )
        assert r.status_code == 202, r.text
        sid, tid = r.json()["session_id"], r.json()["turn_id"]
        chaos.accepted.append((chaos.tenant, sid, tid))
        wait_for(signalled(victim, signal.SIGKILL), 60, what=f"worker SIGKILLed at {point}")
        assert chaos.store.reads.get_turn(chaos.tenant, sid, tid).state is TurnState.COMPLETED
        webhook = chaos.store.outbox.get_webhook(chaos.tenant, sid, tid)
        assert webhook is not None and not webhook.delivered
        assert len(rx.acknowledged()) == ACKED[point] - 1  # what the victim got through

        chaos.procs.worker(DELIVERY_ENV)

        def delivered() -> object:
            wh = chaos.store.outbox.get_webhook(chaos.tenant, sid, tid)
            return wh if wh is not None and wh.delivered else None

        webhook = wait_for(delivered, 40, interval=0.2, what="webhook delivered")
        got = rx.deliveries()

    assert len(rx.acknowledged()) == ACKED[point], [h.answered for h in got]
    assert {h.headers["turnkeep-delivery"] for h in got} == {webhook.delivery_id}
    assert len({h.body for h in got}) == 1
    assert all(webhooks.verify(SECRET, h.body, h.headers["turnkeep-signature"]) for h in got)
    # every POST came from a claim (the victim's claim before its kill counts)
    claims = {FaultPoint.AFTER_SETTLE: 1, FaultPoint.BEFORE_DELIVERY: 2}
    assert webhook.attempts == claims.get(point, 2), webhook
    assert chaos.check() == []
