"""Network partitions, made with a network namespace of the test's own (see netns.py):
a worker inside it reaches Redis and Postgres over two veth links; taking a link's
host end down cuts it off silently.

Cut off from Redis (alone, or from both): its heartbeat cannot renew, the lease
runs out, the worker stops writing (LeaseLost), a worker outside takes over and
completes the turn; after healing, nothing the stale worker still held lands.
Cut off from Postgres alone: its lease stays live, so nobody else may write; it
resumes its own step once healed. Either way nothing is written twice.
"""

from __future__ import annotations

import re
import time

import psycopg
import pytest

from runtime.states import TurnState
from tests.chaos.conftest import Partitioned
from tests.chaos.test_duplicate_delivery import outcomes
from tests.invariants import effects_at_most_once
from tests.procs import Proc, wait_for

#: the session task's end (a worker also runs a webhook delivery pass at start-up)
RUN_ENDED = re.compile(r"turnkeep\.run_session\[[^\]]+\] succeeded in")


def _tool_calls(p: Partitioned, like: str) -> list[tuple[str, int]]:
    with psycopg.connect(p.pg.url().replace("+psycopg", "")) as conn:
        return conn.execute(
            "SELECT key, pid FROM test_tool_calls WHERE key LIKE %s ORDER BY at", (like,)
        ).fetchall()


def _start_inside(p: Partitioned, sid: str, *, steps: int = 4) -> tuple[Proc, str]:
    """A worker in the namespace runs a slow counter turn; returns once it is
    inside its first tool call."""
    c = p.chaos
    inside = c.procs.worker(
        {**p.inside, "TURNKEEP_TEST_TOOL_SLEEP": "1.5"}, wrap=p.netns.wrap, name="inside"
    )
    tid = c.admit(sid, f"steps={steps}")
    key = f"{c.tenant}/{sid}/{tid}/%"
    wait_for(lambda: _tool_calls(p, key), 30, what="the inside worker in a tool call")
    assert {pid for _, pid in _tool_calls(p, key)} == {inside.pid}
    return inside, tid


def _takeover_and_heal(
    p: Partitioned, sid: str, tid: str, inside: Proc, services: list[str]
) -> None:
    c = p.chaos
    stale_fence = c.store.get_session(c.tenant, sid).fence
    for service in services:
        p.netns.partition(service)
    # the worker notices on its own: the heartbeat's deadline passes unrenewed
    wait_for(lambda: "lease lost" in inside.text().lower(), 30, what="inside worker stops")
    c.procs.worker(name="outside")
    c.procs.beat()
    turn = c.wait_terminal(sid, tid, timeout=90)
    settled = c.store.turn_events(c.tenant, sid, tid)
    new_fence = c.store.get_session(c.tenant, sid).fence
    for service in services:
        p.netns.heal(service)
    # give whatever the stale worker still had in flight every chance to land
    wait_for(
        lambda: RUN_ENDED.search(inside.text()) or not inside.alive(),
        60,
        what="the inside worker's task ends after healing",
    )
    time.sleep(1.0)
    assert turn.state is TurnState.COMPLETED, turn.error
    events = c.store.turn_events(c.tenant, sid, tid)
    assert events == settled
    assert new_fence > stale_fence
    takeover = next(e for e in events if e.type == "turn.started" and e.fence == new_fence)
    assert {e.fence for e in events if e.seq >= takeover.seq} == {new_fence}
    assert {e.fence for e in events if e.seq < takeover.seq} <= {0, stale_fence}
    if "postgres" in services:
        # the inside worker may have been in a count call whose table it lost
        assert c.check(effects_table=False) == []
        assert effects_at_most_once(c.database_url, tenants=[c.tenant]) == []
    else:
        assert c.check() == []


@pytest.mark.chaos
@pytest.mark.slow
def test_partition_from_redis_stale_worker_stops_outside_worker_completes(
    partitioned: Partitioned, sid: str
) -> None:
    inside, tid = _start_inside(partitioned, sid)
    _takeover_and_heal(partitioned, sid, tid, inside, ["redis"])


@pytest.mark.chaos
@pytest.mark.slow
def test_partition_from_redis_and_postgres_stale_writes_rejected_after_heal(
    partitioned: Partitioned, sid: str
) -> None:
    inside, tid = _start_inside(partitioned, sid)
    _takeover_and_heal(partitioned, sid, tid, inside, ["redis", "postgres"])


@pytest.mark.chaos
@pytest.mark.slow
def test_partition_from_postgres_keeps_the_lease_and_resumes_after_heal(
    partitioned: Partitioned, sid: str
) -> None:
    p, c = partitioned, partitioned.chaos
    inside, tid = _start_inside(p, sid, steps=3)
    fence = c.store.get_session(c.tenant, sid).fence
    outside = c.procs.worker(name="outside")
    c.procs.beat()
    p.netns.partition("postgres")
    # past several lease TTLs: Redis still hears the heartbeat, so nobody takes over
    for _ in range(12):
        time.sleep(0.5)
        assert c.redis.get(f"turnkeep:lease:{c.tenant}:{sid}") is not None
        assert c.store.get_session(c.tenant, sid).fence == fence
    before = c.store.turn_events(c.tenant, sid, tid)
    p.netns.heal("postgres")
    turn = c.wait_terminal(sid, tid, timeout=120)
    assert turn.state is TurnState.COMPLETED, turn.error
    events = c.store.turn_events(c.tenant, sid, tid)
    assert events[: len(before)] == before
    assert turn.attempt == 1 and {e.fence for e in events if e.fence} == {fence}
    assert "lease lost" not in inside.text().lower()
    assert "ran" not in [r for _, r in outcomes([outside])]
    # a count call that could not reach its table failed, and the model saw so
    assert c.check(effects_table=False) == []
    assert effects_at_most_once(c.database_url, tenants=[c.tenant]) == []
