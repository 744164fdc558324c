"""Network partitions, made with a network namespace of the test's own (see netns.py):
a worker inside it reaches Redis and Postgres over two veth links; taking a link's
host end down cuts it off silently.

Cut off from Redis (alone, or from both): its heartbeat cannot renew, the lease
runs out, the worker stops writing (LeaseLost), a worker outside takes over and
completes the turn; after healing, nothing the stale worker still held lands.
Cut off from Postgres alone: it still reaches Redis, but its Postgres probe hears
nothing for a TTL, so its heartbeat lets the lease go; the recovery scan hands the
session to a worker outside within a few TTLs, which completes the turn; after
healing, the stale worker's writes are refused by the fence. Either way nothing is
written twice.
"""

from __future__ import annotations

import re
import time

import psycopg
import pytest

from tests.chaos.conftest import Partitioned
from tests.chaos.test_duplicate_delivery import outcomes
from tests.conftest import WORKER_ENV
from tests.invariants import effects_at_most_once
from tests.procs import Proc, wait_for
from turnkeep.runtime.states import TurnState

#: a session task's start (a worker also runs a webhook delivery pass at start-up)
RUN_RECEIVED = re.compile(r"turnkeep\.run_session\[([^\]]+)\] received")
#: the lease TTL every test worker runs with
TTL = float(WORKER_ENV["TURNKEEP_LEASE_TTL"])
#: tool calls of the Postgres scenario's turn (the counter agent's 20 iterations allow 19)
PG_STEPS = 16


def _tool_calls(p: Partitioned, like: str) -> list[tuple[str, int]]:
    with psycopg.connect(p.pg.url().replace("+psycopg", "")) as conn:
        return conn.execute(
            "SELECT key, pid FROM test_tool_calls WHERE key LIKE %s ORDER BY at", (like,)
        ).fetchall()


def _stale_run_ended(inside: Proc) -> bool:
    """The inside worker's first session task, the one the partition caught, ended."""
    text = inside.text()
    first = RUN_RECEIVED.search(text)
    return first is not None and f"run_session[{first.group(1)}] succeeded in" in text


def _start_inside(p: Partitioned, sid: str, *, steps: int = 4) -> tuple[Proc, str]:
    """A worker in the namespace runs a slow counter turn; returns once it is
    inside its first tool call."""
    c = p.chaos
    inside = c.procs.worker(
        {**p.inside, "TURNKEEP_TEST_TOOL_SLEEP": "1.5"}, wrap=p.netns.wrap, name="inside"
    )
    tid = c.admit(sid, f"steps={steps}")
    key = f"{c.tenant}/{sid}/{tid}/%"
    wait_for(lambda: _tool_calls(p, key), 60, what="the inside worker in a tool call")
    assert {pid for _, pid in _tool_calls(p, key)} == {inside.pid}
    return inside, tid


def _takeover_and_heal(
    p: Partitioned, sid: str, tid: str, inside: Proc, services: list[str]
) -> None:
    c = p.chaos
    stale_fence = c.store.reads.get_session(c.tenant, sid).fence
    for service in services:
        p.netns.partition(service)
    # the worker notices on its own: the heartbeat's deadline passes unrenewed
    wait_for(lambda: "lease lost" in inside.text().lower(), 60, what="inside worker stops")
    c.procs.worker(name="outside")
    c.procs.beat()
    _heal_and_check(p, sid, tid, inside, services, stale_fence)


def _heal_and_check(
    p: Partitioned, sid: str, tid: str, inside: Proc, services: list[str], stale_fence: int
) -> None:
    """The outside worker completes the turn; then heal, and nothing the stale worker
    (fence ``stale_fence``) still had in flight lands."""
    c = p.chaos
    turn = c.wait_terminal(sid, tid, timeout=90)
    settled = c.store.reads.turn_events(c.tenant, sid, tid)
    new_fence = c.store.reads.get_session(c.tenant, sid).fence
    for service in services:
        p.netns.heal(service)
    # give whatever the stale worker still had in flight every chance to land
    wait_for(
        lambda: _stale_run_ended(inside) or not inside.alive(),
        60,
        what="the inside worker's task ends after healing",
    )
    time.sleep(1.0)
    assert turn.state is TurnState.COMPLETED, turn.error
    events = c.store.reads.turn_events(c.tenant, sid, tid)
    assert events == settled
    # the takeover's fence; the session's may have gone on since (a later claim of a
    # scan's extra delivery that found the lane idle), never back
    takeover = next(e for e in events if e.type == "turn.started" and e.fence > stale_fence)
    assert stale_fence < takeover.fence <= new_fence
    assert {e.fence for e in events if e.seq >= takeover.seq} == {takeover.fence}
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
def test_partition_from_postgres_lets_the_lease_go_and_another_worker_completes(
    partitioned: Partitioned, sid: str
) -> None:
    p, c = partitioned, partitioned.chaos
    # long enough (1.5 s a step) to outlast the outside worker's start-up below, which
    # takes 5 s here and 10 s or more on a loaded machine: a 4-step turn ended before
    # the cut, and there was nothing left to hand over (the scans found no candidate)
    inside, tid = _start_inside(p, sid, steps=PG_STEPS)
    stale_fence = c.store.reads.get_session(c.tenant, sid).fence
    # running before the cut, so that what is timed is the handover alone; beat scans
    # at its default pace, a sixth of the TTL (the tests' TURNKEEP_SCAN_INTERVAL is 1 s)
    c.procs.worker(name="outside")
    c.procs.beat({"TURNKEEP_SCAN_INTERVAL": f"{TTL / 6:.3f}"})
    before = c.store.reads.get_turn(c.tenant, sid, tid)
    assert before.state is TurnState.RUNNING, f"the turn ended before the cut: {before.state}"
    p.netns.partition("postgres")
    cut = time.monotonic()
    # inside still renews with Redis, but its probe hears nothing from Postgres: past
    # a TTL it lets the lease go, and the next scan hands the session over. Without the
    # probe it would renew for as long as the partition lasts: no handover at all
    wait_for(
        lambda: c.store.reads.get_session(c.tenant, sid).fence > stale_fence,
        90,
        interval=0.05,
        what="a worker outside claims the session",
    )
    handover = time.monotonic() - cut
    print(f"handed over {handover:.2f}s after the cut (TTL {TTL:g}s)")
    # about a TTL and a scan here (~2.5 s); a few TTLs on a loaded machine
    assert handover < 10 * TTL, f"handed over {handover:.2f}s after the cut (TTL {TTL:g}s)"
    assert "postgres out of reach" in inside.text()
    _heal_and_check(p, sid, tid, inside, ["postgres"], stale_fence)
    # the stale worker stopped on its lost lease, and ran nothing; a delivery that
    # reached it while it was cut off was dropped ("unreachable")
    done = [r for _, r in outcomes([inside])]
    assert "lease_lost" in done and "ran" not in done, done
