"""store/transport.py on a real Redis: kombu's Redis transport with one synchronous
client per channel, which still publishes, delivers, acknowledges and restores."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
import redis
from kombu import Connection, Exchange, Queue
from kombu.transport import get_transport_cls
from kombu.transport import redis as kombu_redis

from turnkeep.runtime.settings import Settings
from turnkeep.store import transport
from turnkeep.store.producer import celery_app


@pytest.fixture
def connection(redis_url: str) -> Iterator[Connection]:
    transport.install()
    prefix = f"t-transport-{uuid.uuid4().hex[:8]}:"
    conn = Connection(
        redis_url,
        transport_options={"global_keyprefix": prefix, "visibility_timeout": 3600},
    )
    yield conn
    conn.release()
    client = redis.Redis.from_url(redis_url)
    try:
        keys = list(client.scan_iter(match=f"{prefix}*"))
        if keys:
            client.unlink(*keys)
    finally:
        client.close()


def test_every_turnkeep_app_makes_redis_urls_this_transport_and_only_those() -> None:
    celery_app(Settings(broker={"url": "redis://127.0.0.1:6379/3"}))
    assert get_transport_cls("redis") is transport.Transport
    # TLS and other brokers keep kombu's own classes
    assert get_transport_cls("rediss") is kombu_redis.Transport
    assert get_transport_cls("amqp") is not transport.Transport


def test_one_synchronous_client_per_channel_the_async_one_kombus(connection: Connection) -> None:
    channel = connection.default_channel
    assert isinstance(channel, transport.Channel)
    # what Celery logs on connecting and Flower reads its broker from: a redis:// URL
    assert connection.as_uri().startswith("redis://")
    first = channel._create_client()
    assert channel._create_client() is first
    # the asynchronous client (BRPOP, pub/sub) is made from kombu's own pool each time
    assert channel._create_client(asynchronous=True) is not first


def test_messages_go_round_acknowledged_and_an_unacked_one_comes_back(
    connection: Connection,
) -> None:
    name = f"q-{uuid.uuid4().hex[:8]}"
    queue = Queue(name, Exchange(name, type="direct"), routing_key=name)
    with connection.Producer() as producer:
        for i in range(3):
            producer.publish({"n": i}, exchange=queue.exchange, routing_key=name, declare=[queue])
    got: list[int] = []
    simple = connection.SimpleQueue(queue)
    try:
        for _ in range(2):
            message = simple.get(timeout=5)
            got.append(message.payload["n"])
            message.ack()
        held = simple.get(timeout=5)
        got.append(held.payload["n"])
        assert got == [0, 1, 2]
        # the unacked index the shared client wrote is what a restore reads
        unacked = channel_unacked(connection)
        assert held.delivery_tag in unacked
        held.requeue()
        again = simple.get(timeout=5)
        assert again.payload["n"] == 2
        again.ack()
        assert again.delivery_tag not in channel_unacked(connection)
    finally:
        simple.close()


def channel_unacked(connection: Connection) -> set[str]:
    channel = connection.default_channel
    client = channel._create_client()
    tags = client.zrange(channel.unacked_index_key, 0, -1)
    return {t.decode() for t in tags}
