"""SIGKILL of a worker around a rate-limited model call (worker/pace.py), against a local
provider on the OpenAI wire (tests/ratelimited_server.py) and a declared limit of one
call every 4 s: between the reservation and the call (``after_reservation``), right
after the pace committed (``after_pace``: turn.paced written, the session not marked,
the lease held, the wake not sent), and while the turn is paced (the worker holding
its countdown message dies). Another worker takes over: the turn completes, the
provider answered its call once, and every invariant holds."""

from __future__ import annotations

import json
import signal
import uuid

import pytest

from tests.chaos.conftest import Chaos, signalled
from tests.procs import wait_for
from tests.ratelimited_server import RateLimitedAPI, serve
from turnkeep.runtime.states import TurnState
from turnkeep.store.pacer import Pacer

#: one call every 4 s: the second call of a burst waits 4 s, past the hold
LIMITS = json.dumps([{"provider": "openai", "model": "paced-model", "requests_per_minute": 15}])


def _env(api: RateLimitedAPI) -> dict[str, str]:
    return {
        "TURNKEEP_OPENAI_BASE_URL": api.base,
        "TURNKEEP_OPENAI_API_KEY": "sk-test-pace-points",
        "TURNKEEP_RATE_LIMITS": LIMITS,
    }


def _first(chaos: Chaos) -> None:
    """Another session's call, made and answered: it took the bucket's slot."""
    other = f"x-{uuid.uuid4().hex[:6]}"
    turn = chaos.wait_terminal(other, chaos.admit(other, "first", agent="paced"))
    assert turn.state is TurnState.COMPLETED, turn.error


def _paced(chaos: Chaos, sid: str, tid: str) -> list[object]:
    return [
        e for e in chaos.store.reads.turn_events(chaos.tenant, sid, tid) if e.type == "turn.paced"
    ]


def _done(chaos: Chaos, api: RateLimitedAPI, sid: str, tid: str, text: str) -> None:
    turn = chaos.wait_terminal(sid, tid, timeout=60)
    assert turn.state is TurnState.COMPLETED, turn.error
    assert turn.result == {"text": "paced"}
    assert [s.served for s in api.asked(text)] == [True]  # its call was made once
    chaos.wait_all_terminal(timeout=60)  # the other session's turn too (the kill may cut it)
    assert chaos.check() == []


@pytest.mark.chaos
@pytest.mark.parametrize("point", ["after_reservation", "after_pace"])
def test_sigkill_around_a_paced_call_then_it_completes(chaos: Chaos, sid: str, point: str) -> None:
    with serve(requests=100, tokens=1_000_000, window=60.0) as api:
        chaos.procs.beat()
        victim = chaos.procs.worker(
            {**_env(api), "TURNKEEP_FAULTS": f"{point}=kill-once", "TURNKEEP_FAULTS_SESSIONS": sid}
        )
        # another session's call takes the slot now: the victim's waits (up to) 4 s
        _first(chaos)
        text = f"paced at {point}"
        tid = chaos.admit(sid, text, agent="paced")
        wait_for(signalled(victim, signal.SIGKILL), 30, what=f"worker SIGKILLed at {point}")
        paced = _paced(chaos, sid, tid)
        # after_reservation: a slot booked, nothing written; after_pace: the pace is
        # committed, the attempt given back, and the session never marked
        assert len(paced) == (1 if point == "after_pace" else 0)
        turn = chaos.store.reads.get_turn(chaos.tenant, sid, tid)
        assert turn.attempt == (0 if point == "after_pace" else 1)
        assert Pacer(chaos.redis).pending(chaos.tenant, sid) is None
        assert api.asked(text) == []

        chaos.procs.worker(_env(api))
        _done(chaos, api, sid, tid, text)


@pytest.mark.chaos
def test_the_worker_holding_a_paced_turns_wake_dies_then_it_completes(
    chaos: Chaos, sid: str
) -> None:
    with serve(requests=100, tokens=1_000_000, window=60.0) as api:
        chaos.procs.beat()
        holder = chaos.procs.worker(_env(api))
        _first(chaos)
        text = "paced, its wake lost"
        tid = chaos.admit(sid, text, agent="paced")
        wait_for(lambda: _paced(chaos, sid, tid), 30, what="the turn paced")
        pacer = Pacer(chaos.redis)
        wait_for(lambda: pacer.pending(chaos.tenant, sid), 10, what="the session marked paced")
        # the countdown message left the queue: the worker holds it, unacknowledged
        wait_for(lambda: chaos.queued() == 0, 10, what="the wake taken by the worker")
        holder.signal(signal.SIGKILL)
        wait_for(lambda: not holder.alive(), 10, what="the holder dead")

        chaos.procs.worker(_env(api))
        _done(chaos, api, sid, tid, text)
        turn = chaos.store.reads.get_turn(chaos.tenant, sid, tid)
        assert turn.attempt == 1  # the paced attempt was given back
