"""The broker parts on real servers (store/brokers.py, store/fair.py, store/held.py):
queue depths read on whichever broker the run uses (Redis lists, or RabbitMQ's
passive declare under ``make test-amqp``), the fair rotation's order in Redis, and
the held sets."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
import redis
from celery import Celery

from tests.procs import wait_for
from turnkeep.runtime.settings import get_settings
from turnkeep.store import keys
from turnkeep.store.brokers import BrokerKind, QueueDepths, broker_kind, celery_options
from turnkeep.store.fair import FairQueue
from turnkeep.store.held import HeldSessions, Scope
from turnkeep.store.keys import broker_keyprefix, prefix


@pytest.fixture
def rclient(redis_url: str) -> Iterator[redis.Redis]:
    client = redis.Redis.from_url(redis_url)
    yield client
    client.close()


def test_queue_depths_count_what_waits_and_a_queue_never_declared_is_empty(
    service_env: dict[str, str],
) -> None:
    settings = get_settings()
    url = settings.effective_broker_url
    queue = f"{settings.broker.queue}.depth-{uuid.uuid4().hex[:6]}"
    app = Celery("depths", broker=url, set_as_current=False)
    app.conf.broker_transport_options = {"global_keyprefix": broker_keyprefix(prefix())}
    app.conf.update(celery_options(broker_kind(url)))
    for i in range(3):
        app.send_task("turnkeep.nothing", args=[i], queue=queue, priority=i)
    depths = QueueDepths(url, keyprefix=broker_keyprefix(prefix()))
    try:
        expected = {queue: 3, f"{queue}.never": 0}
        # RabbitMQ routes a publish after basic.publish returns (no publisher confirms):
        # a passive declare just after may count fewer; never more
        seen = wait_for(
            lambda: (d := depths.read([queue, f"{queue}.never"]))[queue] >= 3 and d,
            10,
            what="three messages routed to the queue",
        )
        assert seen == expected
    finally:
        depths.close()
        if broker_kind(url) is BrokerKind.AMQP:
            with app.connection_for_write() as conn:
                channel = conn.channel()
                channel.queue_delete(queue=queue)
                channel.exchange_delete(exchange=queue)
                channel.close()
        app.close()


def test_the_pick_takes_the_tenants_in_turn_and_each_tenants_highest_band_first(
    rclient: redis.Redis, service_env: dict[str, str]
) -> None:
    fair = FairQueue(rclient, get_settings().broker.queue)
    run = uuid.uuid4().hex[:6]
    a, b, c = f"a-{run}", f"b-{run}", f"c-{run}"
    for i in range(3):
        assert fair.submit(a, f"a{i}", priority=9)
    assert not fair.submit(a, "a0", priority=9)  # already waiting: not twice
    fair.submit(b, "b0")
    fair.submit(c, "c0", priority=0)
    fair.submit(b, "b1", priority=9)
    fair.submit(a, "a-low", priority=1)
    picked = [fair.pick() for _ in range(9)]
    assert picked == [
        # a tenant at a time, whatever its bands: 9 buys no place among tenants
        (a, "a0"),
        (b, "b1"),  # within a tenant its highest band first
        (c, "c0"),
        (a, "a1"),
        (b, "b0"),
        (a, "a2"),
        (a, "a-low"),  # then its lower bands
        None,  # every set empty: the ticket runs its own session
        None,
    ]
    assert fair.waiting(a) == 0
    fair.submit(b, "b2")  # a tenant whose sets emptied comes back in the rotation
    assert fair.pick() == (b, "b2")


def test_the_pick_drains_the_per_band_rings_an_earlier_version_left(
    rclient: redis.Redis, service_env: dict[str, str]
) -> None:
    """Sessions a producer of the version before sent (a ring per band) are run too."""
    queue = get_settings().broker.queue
    fair = FairQueue(rclient, queue)
    tenant = f"old-{uuid.uuid4().hex[:6]}"
    rclient.zadd(keys.fair_ready_key(queue, 5, tenant), {"s-old": 1})
    rclient.rpush(keys.fair_legacy_ring_key(queue, 5), tenant)
    assert fair.pick() == (tenant, "s-old")
    assert fair.pick() is None


def test_held_sessions_wake_oldest_first_and_the_scan_sees_them(
    rclient: redis.Redis, service_env: dict[str, str]
) -> None:
    held = HeldSessions(rclient)
    tenant = f"t-{uuid.uuid4().hex[:6]}"
    scope, agent = Scope(tenant), Scope(tenant, "capped")
    held.hold(scope, "s1", 1.0)
    held.hold(agent, "s2", 2.0)
    held.hold(scope, "s3", 3.0)
    held.hold(scope, "s1", 9.0)  # held again: keeps its place
    held.hold(scope, "s0", 0.5)  # admitted first, held later: ahead of them
    assert {scope, agent} <= set(held.scopes())
    assert held.among([(tenant, "s1"), (tenant, "s2"), (tenant, "s9")]) == [True, True, False]
    # s0 no longer waits (it ran, or was cancelled): dropped, never sent
    asked: list[list[str]] = []

    def waiting(t: str, sessions: list[str]) -> set[str]:
        asked.append(sessions)
        return set(sessions) - {"s0"}

    assert [held.wake(scope, waiting) for _ in range(3)] == ["s1", "s3", None]
    assert asked[0] == ["s0", "s1", "s3"]
    assert scope not in held.scopes()  # an empty scope leaves the index
    # a started session leaves every set of its tenant; a released set is emptied
    held.hold(scope, "s4")
    held.hold(scope, "s5")
    held.leave(tenant, "s2", "capped")
    assert held.held(agent) == set() and agent not in held.scopes()
    assert held.release(scope) == ["s4", "s5"]
    assert held.scopes() == [] or scope not in held.scopes()
