"""The one producer: one per process and broker, ids-only messages by task name, a
failed send that never raises nor names the broker, and a worker app that is the
producer's app (so their settings cannot drift). No services: an in-memory broker,
and a closed port for the failing one."""

from __future__ import annotations

import logging

import pytest

from turnkeep.runtime.names import TASK_RUN_SESSION
from turnkeep.runtime.settings import Settings, get_settings
from turnkeep.store.producer import Producer, celery_config


def settings(broker: str, queue: str) -> Settings:
    # a Redis broker's fair sets on that same (closed) Redis: no test reaches a service
    redis_url = broker if broker.startswith("redis") else "redis://127.0.0.1:9/0"
    return Settings(broker={"url": broker, "queue": queue}, redis={"url": redis_url})


def test_one_producer_per_broker_and_queue() -> None:
    a = Producer.from_settings(settings("memory://", "q-one"))
    assert Producer.from_settings(settings("memory://", "q-one")) is a
    assert Producer.from_settings(settings("memory://", "q-two")) is not a
    a.close()
    assert Producer.from_settings(settings("memory://", "q-one")) is not a


def test_the_message_is_the_task_name_and_ids_only() -> None:
    producer = Producer.from_settings(settings("memory://", "q-ids"))
    try:
        assert producer.enqueue("tenant-1", "session-1") is True
        with producer.app.connection_for_read() as conn:
            queue = conn.SimpleQueue("q-ids")
            message = queue.get(timeout=2)
            message.ack()
            queue.close()
        assert message.headers["task"] == TASK_RUN_SESSION
        assert message.content_type == "application/json"
        args, kwargs, _embed = message.decode()
        assert args == ["tenant-1", "session-1"] and kwargs == {}
    finally:
        producer.close()


def test_a_refused_send_is_false_and_logged_by_type_only(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING)
    # nothing listens on port 9: refused at once, after the quick retries
    producer = Producer.from_settings(settings("redis://:hunter2@127.0.0.1:9/0", "q-down"))
    try:
        assert producer.enqueue("tenant-1", "session-1") is False
        with pytest.raises(Exception):  # noqa: B017 - whatever the transport raises
            producer.send("tenant-1", "session-1")
    finally:
        producer.close()
    assert "enqueue of run_session failed" in caplog.text
    assert "hunter2" not in caplog.text


def test_the_worker_app_is_the_producer_app() -> None:
    import turnkeep.worker.app

    env = get_settings()
    assert turnkeep.worker.app.producer is Producer.from_settings(env)
    assert turnkeep.worker.app.app is turnkeep.worker.app.producer.app
    conf = turnkeep.worker.app.app.conf
    shared = celery_config(env)
    # the worker adds its visibility timeout to the producer's transport options
    options = shared.pop("broker_transport_options")
    assert options.items() <= dict(conf.broker_transport_options).items()
    assert conf.broker_transport_options["visibility_timeout"] > env.worker.task_time_limit
    for key, value in shared.items():
        assert conf[key] == value, key


def test_the_result_backend_is_built_once_per_app_not_once_per_thread() -> None:
    # Celery builds a backend by scanning every installed distribution's entry points;
    # per thread, a worker of 256 threads did that 256 times before its first turns
    import threading

    import turnkeep.worker.app

    app = turnkeep.worker.app.app
    seen: list[object] = []
    threads = [threading.Thread(target=lambda: seen.append(app.backend)) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(seen) == 3 and all(b is app.backend for b in seen)
    assert app.conf.task_ignore_result is True


def test_a_turns_priority_maps_onto_kombus_redis_steps() -> None:
    """0 is kombu's Redis highest (steps 0, 3, 6, 9; a value joins the step at or below
    it): priority 9 goes ahead of everything, the default 5 between, 0 behind."""
    from kombu.transport.redis import PRIORITY_STEPS

    from turnkeep.store.brokers import BrokerKind, broker_priority

    def step(n: int) -> int:
        return max(s for s in PRIORITY_STEPS if s <= n)

    def redis(p: int | None) -> int:
        return broker_priority(BrokerKind.REDIS, p)

    assert [redis(p) for p in (9, None, 5, 0)] == [0, 4, 4, 9]
    assert step(redis(9)) < step(redis(None)) < step(redis(0))


def test_on_rabbitmq_a_turns_priority_is_the_messages_and_queues_declare_their_levels() -> None:
    """RabbitMQ serves the highest first, one level per value up to the queue's
    x-max-priority, which every turnkeep app declares its queues with."""
    from turnkeep.store.brokers import AMQP_MAX_PRIORITY, BrokerKind, broker_kind, broker_priority

    assert broker_kind("amqp://guest:guest@127.0.0.1:5672//") is BrokerKind.AMQP
    assert [broker_priority(BrokerKind.AMQP, p) for p in (9, None, 5, 0)] == [9, 5, 5, 0]
    conf = celery_config(settings("amqp://guest@127.0.0.1:9//", "q-amqp"))
    assert conf["task_queue_max_priority"] == AMQP_MAX_PRIORITY == 9
    assert "task_queue_max_priority" not in celery_config(settings("redis://h:9/0", "q-redis"))


def test_a_broker_turnkeep_cannot_run_on_is_refused_by_name() -> None:
    from turnkeep.store.brokers import UnsupportedBroker, broker_kind

    with pytest.raises(UnsupportedBroker, match="sqs"):
        broker_kind("sqs://key@region")
