"""Redis loses everything mid-run: a restart of the (private, unpersisted) server, or
a FLUSHALL, while many sessions run. Leases, the fence counter and the broker's
queue are gone at once. Every turn completes, no fence ever goes down, and Redis's
fence counter ends at or above every fence Postgres accepted.

No supervisor: the worker processes that ran the turns when Redis went away are the
ones that run them to the end. A restart drops every broker connection while
acks-late tasks are in flight; each worker must reconnect and go on consuming
(pyproject.toml says why Celery stays below 5.7).
"""

from __future__ import annotations

import random
import re
import time

import pytest

from tests.chaos.conftest import Chaos
from tests.invariants import FenceWatcher, redis_fence_covers_postgres
from tests.procs import Proc, wait_for
from turnkeep.runtime.states import TurnState
from turnkeep.store.keys import fence_key

SESSIONS = 6
TURNS = 2
#: what a Celery worker logs when its consumer saw the broker go (and will reconnect)
BROKER_LOST = "Connection to broker lost"
#: what it logs on each connection to the broker, the first one included
CONNECTED = "Connected to redis://"
RECEIVED = re.compile(r"Task turnkeep\.run_session\[([^\]]+)\] received")
FINISHED = re.compile(r"Task turnkeep\.run_session\[([^\]]+)\] (?:succeeded|raised|failed)")


def _busy(chaos: Chaos) -> tuple[FenceWatcher, list[Proc]]:
    """Two workers and beat, SESSIONS x TURNS counter turns admitted; returns the
    fence watcher it started and the workers, once most sessions are running."""
    slow = {"TURNKEEP_TEST_TOOL_SLEEP": "0.5"}
    workers = [chaos.procs.worker(slow, concurrency=4) for _ in range(2)]
    chaos.procs.beat()
    watcher = FenceWatcher(chaos.database_url).start()
    rng = random.Random(len(chaos.tenant))
    sids = [f"s-busy-{i}" for i in range(SESSIONS)]
    for turn in range(TURNS):
        for sid in sids:
            chaos.admit(sid, f"steps={rng.randint(3, 5)} turn {turn}")
    wait_for(
        lambda: all(chaos.store.reads.get_session(chaos.tenant, s).fence > 0 for s in sids[:4]),
        30,
        what="sessions running",
    )
    return watcher, workers


def _settle_and_check(
    chaos: Chaos, watcher: FenceWatcher, fences_before: dict[str, int], workers: list[Proc]
) -> None:
    # one more turn per session, so every session is leased again after Redis lost
    # its counter: then that counter must cover every fence Postgres accepted
    for sid in fences_before:
        chaos.admit(sid, "steps=1 after the fault")
    chaos.wait_all_terminal(timeout=120)
    assert watcher.stop() == []
    assert watcher.observations > 10  # the watcher really watched
    for key in chaos.accepted:
        turn = chaos.store.reads.get_turn(*key)
        assert turn.state is TurnState.COMPLETED, (key, turn.state, turn.error)
    # the Redis counter restarted from nothing, yet every new grant was floored to
    # Postgres: each session ran again under a fence above its old one
    for sid, before in fences_before.items():
        after = chaos.store.reads.get_session(chaos.tenant, sid).fence
        assert after > before, (sid, before, after)
    assert (
        redis_fence_covers_postgres(chaos.database_url, chaos.redis, tenants=[chaos.tenant]) == []
    )
    assert chaos.check() == []
    # the workers that were running the turns ran the rest too: none of them exited
    assert [w.pid for w in workers if not w.alive()] == []
    for w in workers:
        assert "Unrecoverable error" not in w.text()


def _in_flight(worker: Proc) -> set[str]:
    """The run_session tasks a worker received and has not finished, from its log."""
    text = worker.text()
    received = set(RECEIVED.findall(text))
    return received - set(FINISHED.findall(text))


def _reconnected(worker: Proc) -> bool:
    text = worker.text()
    return BROKER_LOST in text and text.count(CONNECTED) >= 2


def _fences(chaos: Chaos) -> dict[str, int]:
    return {k[1]: chaos.store.reads.get_session(chaos.tenant, k[1]).fence for k in chaos.accepted}


@pytest.mark.chaos
def test_redis_restart_mid_turn_on_a_busy_run(chaos: Chaos) -> None:
    watcher, workers = _busy(chaos)
    chaos.redis.set("chaos:marker", "1")
    # acks-late turns are in flight (received, not finished) on both workers when
    # the broker goes: the unacked deliveries a reconnect has to deal with
    wait_for(
        lambda: all(_in_flight(w) for w in workers), 15, what="a turn in flight on each worker"
    )
    chaos.redis_proc.stop()
    fences_before = _fences(chaos)
    time.sleep(3.0)  # past the lease TTL: every holder's heartbeat fails meanwhile
    chaos.redis_proc = chaos.procs.redis_server(chaos.redis_port)
    assert chaos.redis.get("chaos:marker") is None  # it came back empty (no persistence)
    # each worker's consumer saw the broker go and connected again (or exited)
    wait_for(
        lambda: all(_reconnected(w) or not w.alive() for w in workers),
        30,
        what="every worker to reconnect to the broker",
    )
    assert [w.pid for w in workers if not w.alive()] == [], "a worker exited on the broker loss"
    _settle_and_check(chaos, watcher, fences_before, workers)


@pytest.mark.chaos
def test_redis_flushall_mid_turn_on_a_busy_run(chaos: Chaos) -> None:
    watcher, workers = _busy(chaos)
    fences_before = _fences(chaos)
    chaos.redis.flushall()
    assert chaos.redis.get(fence_key()) is None
    _settle_and_check(chaos, watcher, fences_before, workers)
