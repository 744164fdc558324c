"""Fair delivery across tenants (issue 26): tenant A admits 2,000 turns, then tenant B
admits one at a time; B's turn starts within 2 s (p95 over 20 tries) while the
workers are busy on A's backlog, which is still there at the end. Sent through the
producer every surface uses (store/producer.py, tickets and ready sets:
store/fair.py), on whichever broker the run uses (``make test-amqp``: RabbitMQ)."""

from __future__ import annotations

import statistics
import uuid
from collections.abc import Iterator

import pytest
import redis

from tests.procs import wait_for
from turnkeep.runtime.settings import get_settings
from turnkeep.runtime.states import TurnState
from turnkeep.store.fair import FairQueue
from turnkeep.store.producer import Producer

BACKLOG = 2000
TRIES = 20
#: seconds B's turn may wait for a worker, at the 95th percentile
BOUND = 2.0


@pytest.fixture
def producer(service_env: dict[str, str]) -> Iterator[Producer]:
    producer = Producer.from_settings(get_settings())
    yield producer
    producer.close()


def _start_latency(store, tenant: str, sid: str, tid: str) -> float | None:
    events = store.reads.turn_events(tenant, sid, tid)
    accepted = [e.created_at for e in events if e.type == "turn.accepted"]
    started = [e.created_at for e in events if e.type == "turn.started"]
    if not started:
        return None
    return (started[0] - accepted[0]).total_seconds()


def test_one_tenants_backlog_does_not_starve_another(procs, client, store, producer) -> None:
    run = uuid.uuid4().hex[:6]
    a, b = f"tA-{run}", f"tB-{run}"
    for i in range(BACKLOG):
        sid = f"a-{i}"
        client.admit(a, sid, "counter", "steps=1", enqueue=False)
        producer.send(a, sid)
    procs.worker({"TURNKEEP_TEST_TOOL_SLEEP": "0.2"}, concurrency=4)
    latencies = []
    for i in range(TRIES):
        sid = f"b-{i}"
        tid = client.admit(b, sid, "counter", "steps=1", enqueue=False)
        producer.send(b, sid)
        latency = wait_for(
            lambda sid=sid, tid=tid: _start_latency(store, b, sid, tid), 60, what=f"B's {sid}"
        )
        latencies.append(float(latency))  # type: ignore[arg-type]
    p95 = statistics.quantiles(latencies, n=20)[-1]
    assert p95 < BOUND, sorted(latencies)
    # the workers ran A's turns meanwhile (oldest first), and A's backlog is still there
    [first] = store.reads.turn_page(a, "a-0", limit=1)
    [last] = store.reads.turn_page(a, f"a-{BACKLOG - 1}", limit=1)
    assert first.state is TurnState.COMPLETED
    assert last.state is TurnState.QUEUED, "A's backlog drained first: nothing was proved"


#: tenant A's backlog admitted at the highest priority against B's default one
PRIORITY_BACKLOG = 600
PRIORITY_TRIES = 10


def test_a_tenant_cannot_buy_precedence_over_another_with_priority_9(
    procs, client, store, producer
) -> None:
    """Priority orders a tenant's own work, not its place among tenants: A admits its
    backlog at 9, B its turns at the default 5, and B's still start within the bound
    while A drains, as if A had admitted at 5."""
    run = uuid.uuid4().hex[:6]
    a, b = f"tA9-{run}", f"tB5-{run}"
    for i in range(PRIORITY_BACKLOG):
        sid = f"a-{i}"
        client.admit(a, sid, "counter", "steps=1", enqueue=False)
        producer.send(a, sid, priority=9)
    procs.worker({"TURNKEEP_TEST_TOOL_SLEEP": "0.2"}, concurrency=4)
    latencies = []
    for i in range(PRIORITY_TRIES):
        sid = f"b-{i}"
        tid = client.admit(b, sid, "counter", "steps=1", enqueue=False)
        producer.send(b, sid)
        latency = wait_for(
            lambda sid=sid, tid=tid: _start_latency(store, b, sid, tid), 30, what=f"B's {sid}"
        )
        latencies.append(float(latency))  # type: ignore[arg-type]
    # one outlier allowed on a loaded machine; on a pick by band, B's first never starts
    assert sorted(latencies)[-2] < BOUND, sorted(latencies)
    [last] = store.reads.turn_page(a, f"a-{PRIORITY_BACKLOG - 1}", limit=1)
    assert last.state is TurnState.QUEUED, "A's backlog drained first: nothing was proved"


def test_a_ready_entry_without_a_ticket_never_strands_a_session(
    procs, client, store, producer, redis_url
) -> None:
    """Entries whose tickets never came (a crash between the two sends, or a session
    run already) are picked first, find nothing to run, and the ticket runs its own."""
    run = uuid.uuid4().hex[:6]
    fair = FairQueue(redis.Redis.from_url(redis_url), get_settings().broker.queue)
    try:
        for i in range(3):  # older than the real one, and of other tenants: picked first
            fair.submit(f"tGhost{i}-{run}", f"never-admitted-{i}")
        tid = client.admit(f"tReal-{run}", "s-real", "counter", "steps=1", enqueue=False)
        producer.send(f"tReal-{run}", "s-real")
        procs.worker(concurrency=1)
        turn = client.wait_terminal(f"tReal-{run}", "s-real", tid, timeout=60)
        assert turn.state is TurnState.COMPLETED
    finally:
        fair.redis.close()
