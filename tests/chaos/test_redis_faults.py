"""Redis loses everything mid-run: a restart of the (private, unpersisted) server, or
a FLUSHALL, while many sessions run. Leases, the fence counter and the broker's
queue are gone at once. Every turn completes, no fence ever goes down, and Redis's
fence counter ends at or above every fence Postgres accepted.
"""

from __future__ import annotations

import random
import time

import pytest

from runtime.states import TurnState
from tests.chaos.conftest import Chaos, Supervisor
from tests.invariants import FenceWatcher, redis_fence_covers_postgres
from tests.procs import wait_for

SESSIONS = 6
TURNS = 2


def _busy(chaos: Chaos, supervisor: Supervisor) -> FenceWatcher:
    """Two supervised workers and beat, SESSIONS x TURNS counter turns admitted;
    returns the fence watcher it started, once most sessions are running."""
    slow = {"TURNKEEP_TEST_TOOL_SLEEP": "0.5"}
    supervisor.worker(slow, concurrency=4)
    supervisor.worker(slow, concurrency=4)
    chaos.procs.beat()
    watcher = FenceWatcher(chaos.database_url).start()
    rng = random.Random(len(chaos.tenant))
    sids = [f"s-busy-{i}" for i in range(SESSIONS)]
    for turn in range(TURNS):
        for sid in sids:
            chaos.admit(sid, f"steps={rng.randint(3, 5)} turn {turn}")
    wait_for(
        lambda: all(chaos.store.get_session(chaos.tenant, s).fence > 0 for s in sids[:4]),
        30,
        what="sessions running",
    )
    return watcher


def _settle_and_check(chaos: Chaos, watcher: FenceWatcher, fences_before: dict[str, int]) -> None:
    # one more turn per session, so every session is leased again after Redis lost
    # its counter: then that counter must cover every fence Postgres accepted
    for sid in fences_before:
        chaos.admit(sid, "steps=1 after the fault")
    chaos.wait_all_terminal(timeout=120)
    assert watcher.stop() == []
    assert watcher.observations > 10  # the watcher really watched
    for key in chaos.accepted:
        turn = chaos.store.get_turn(*key)
        assert turn.state is TurnState.COMPLETED, (key, turn.state, turn.error)
    # the Redis counter restarted from nothing, yet every new grant was floored to
    # Postgres: each session ran again under a fence above its old one
    for sid, before in fences_before.items():
        after = chaos.store.get_session(chaos.tenant, sid).fence
        assert after > before, (sid, before, after)
    assert (
        redis_fence_covers_postgres(chaos.database_url, chaos.redis, tenants=[chaos.tenant]) == []
    )
    assert chaos.check() == []


def _fences(chaos: Chaos) -> dict[str, int]:
    return {k[1]: chaos.store.get_session(chaos.tenant, k[1]).fence for k in chaos.accepted}


@pytest.mark.chaos
def test_redis_restart_mid_turn_on_a_busy_run(chaos: Chaos, supervisor: Supervisor) -> None:
    # Celery 5.7 workers with acks_late tasks in flight may exit on the broker loss
    # ("Unrecoverable error: AttributeError ... 'hostname'" while restoring unacked
    # messages); the supervisor restarts them as systemd's Restart=always would
    watcher = _busy(chaos, supervisor)
    chaos.redis.set("chaos:marker", "1")
    chaos.redis_proc.stop()
    fences_before = _fences(chaos)
    time.sleep(3.0)  # past the lease TTL: every holder's heartbeat fails meanwhile
    chaos.redis_proc = chaos.procs.redis_server(chaos.redis_port)
    assert chaos.redis.get("chaos:marker") is None  # it came back empty (no persistence)
    _settle_and_check(chaos, watcher, fences_before)
    print(f"worker restarts after the redis restart: {supervisor.stop()}")


@pytest.mark.chaos
def test_redis_flushall_mid_turn_on_a_busy_run(chaos: Chaos, supervisor: Supervisor) -> None:
    watcher = _busy(chaos, supervisor)
    fences_before = _fences(chaos)
    chaos.redis.flushall()
    assert chaos.redis.get("turnkeep:fence") is None
    _settle_and_check(chaos, watcher, fences_before)
