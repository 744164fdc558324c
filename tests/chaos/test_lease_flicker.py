"""Regression: a lease deadline that passed must stay passed.

The heartbeat's ``lost`` was computed afresh on every look (``now >= valid_until``),
so a renewal that was late but still landed made it flip back to False. A model call
stopped in that window (its ``should_stop`` saw "lost") raised ``ModelCallCancelled``;
by the time the provider had hung up the renewal was in, the commit's lease check
passed, and the turn was committed ``cancelled``: a turn nobody cancelled.

The provider here hangs up slowly, as a streaming HTTP one does, and the renewal is
late in two ways: sent late (``in_lease_renewal`` sleeps past the deadline), or sent
in time but its reply held back by a slow network (a proxy in front of Redis for the
worker's leases) until after the deadline.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator

import pytest

from tests.chaos.conftest import Chaos
from tests.chaos.tcpdelay import DelayProxy
from tests.procs import wait_for
from turnkeep.runtime.agents.registry import load_agents
from turnkeep.runtime.hashing import input_hash
from turnkeep.runtime.states import TurnState
from turnkeep.store.lease import RENEW
from turnkeep.store.new_turn import NewTurn

AGENTS = {"TURNKEEP_AGENTS": "tests.chaos.chaos_agents"}

#: the session task's end (a worker also runs a webhook delivery pass at start-up)
RUN_ENDED = re.compile(r"turnkeep\.run_session\[[^\]]+\] succeeded in")


@pytest.fixture
def redis_delay(chaos: Chaos) -> Iterator[DelayProxy]:
    proxy = DelayProxy(chaos.redis_port).start()
    yield proxy
    proxy.close()


def admit_streamer(chaos: Chaos, sid: str, text: str) -> str:
    agent = load_agents("tests.chaos.chaos_agents").get("streamer")
    messages = [{"role": "user", "content": text}]
    tid = f"flicker-{sid}"
    chaos.store.turns.admit(
        NewTurn(
            tenant_id=chaos.tenant,
            session_id=sid,
            turn_id=tid,
            agent_name=agent.name,
            agent_hash=agent.definition_hash,
            input_hash=input_hash(
                messages=messages, agent_hash=agent.definition_hash, output_schema=None, budget=None
            ),
            input={"messages": messages},
            output_schema=None,
            budget=None,
        )
    )
    chaos.accepted.append((chaos.tenant, sid, tid))
    chaos.client.enqueue(chaos.tenant, sid)
    return tid


def victim_env(chaos: Chaos, proxy: DelayProxy, late: str) -> dict[str, str]:
    if late == "renewal_sent_late":
        # TTL 2: deadline at 1.6 s; the first renewal, due at 0.67 s, leaves at 1.87 s
        # and lands; the model call stops at 1.6 s and hangs up until 2.6 s
        return {
            **AGENTS,
            "TURNKEEP_FAULTS": "in_lease_renewal=sleep:1.2",
            "TURNKEEP_CHAOS_MODEL_LATENCY": "2.5",
            "TURNKEEP_CHAOS_STOP_DELAY": "1.0",
        }
    # TTL 7: deadline at 5.6 s; the first renewal leaves at 2.33 s, its answer is held
    # 4.2 s (under the client's 5 s socket timeout) and lands at 6.53 s (the key lives
    # until 7 s), which would move the deadline to 2.33 + 5.6 = 7.93 s; the model call
    # stops at 5.6 s and hangs up until 7.2 s
    sha = hashlib.sha1(RENEW.encode()).hexdigest().encode()
    proxy.delay_reply(sha, 4.2)
    return {
        **AGENTS,
        "TURNKEEP_LEASE_TTL": "7",
        "TURNKEEP_REDIS_URL": f"redis://127.0.0.1:{proxy.port}/0",
        "TURNKEEP_BROKER_URL": chaos.redis_url,
        "TURNKEEP_CHAOS_MODEL_LATENCY": "10",
        "TURNKEEP_CHAOS_STOP_DELAY": "1.6",
    }


@pytest.mark.chaos
@pytest.mark.parametrize("late", ["renewal_sent_late", "reply_late"])
def test_late_renewal_does_not_turn_a_stopped_model_call_into_a_cancellation(
    chaos: Chaos, redis_delay: DelayProxy, sid: str, late: str
) -> None:
    victim = chaos.procs.worker(victim_env(chaos, redis_delay, late))
    tid = admit_streamer(chaos, sid, "steps=1")
    wait_for(lambda: RUN_ENDED.search(victim.text()), 60, what="the victim's task ends")
    victim.stop()
    if late == "reply_late":
        assert redis_delay.delayed == 1  # the renewal's answer really was held back
    turn = chaos.store.reads.get_turn(chaos.tenant, sid, tid)
    assert turn.state is not TurnState.CANCELLED, "a turn nobody cancelled was cancelled"
    # it stopped, as it must once its deadline passed, and wrote nothing more
    assert "'lease_lost'" in victim.text(), victim.text()[-1500:]
    # a healthy worker (a quick model, the usual 2 s TTL) picks it up and finishes it
    chaos.procs.worker(AGENTS)
    chaos.procs.beat(AGENTS)
    turn = chaos.wait_terminal(sid, tid, timeout=60)
    assert turn.state is TurnState.COMPLETED, turn.error
    assert not turn.cancel_requested
    types = [e.type for e in chaos.store.reads.turn_events(chaos.tenant, sid, tid)]
    assert "turn.cancelled" not in types
    assert chaos.check() == []
