"""The two brokers a deployment may run on, and what differs between them.

``TURNKEEP_BROKER_URL`` unset or ``redis://…``: kombu's Redis transport (tuned in
store/transport.py), the queue a set of lists under the deployment's key prefix.
``amqp://…`` (or ``pyamqp://``): RabbitMQ, Celery's recommended production broker; its
queues are declared with ``x-max-priority`` so priorities are the broker's own. Leases,
live deltas, the fair-delivery sets and counters stay in Redis either way
(``TURNKEEP_REDIS_URL``): only the Celery messages move.

What differs, and only here:

- the message priority a turn's priority 0-9 is sent with (``broker_priority``):
  kombu's Redis transport serves lower numbers first in four steps, RabbitMQ higher
  numbers first, one level per value;
- the Celery settings each needs on top of the shared ones (``celery_options``);
- how the depth of a queue is read (``QueueDepths``): the Redis lists' lengths, or a
  passive ``queue.declare`` on RabbitMQ (its count of ready messages, as the lists'
  lengths are). Both leave out messages a worker holds unacknowledged.
"""

from __future__ import annotations

import threading
from enum import StrEnum
from typing import Any

import redis
from kombu.connection import Connection
from kombu.transport.redis import PRIORITY_STEPS
from kombu.transport.redis import Channel as RedisChannel

#: a turn's priority: 0 (last) to 9 (first); a delivery that names none is at 5
PRIORITIES = range(10)
DEFAULT_PRIORITY = 5
#: RabbitMQ's x-max-priority of every queue turnkeep declares: one level per priority
AMQP_MAX_PRIORITY = max(PRIORITIES)
#: seconds to wait on the broker when reading depths
DEPTH_TIMEOUT = 2.0


class BrokerKind(StrEnum):
    """Which broker a URL names."""

    #: kombu's Redis transport (redis://, rediss://, unix://)
    REDIS = "redis"
    #: RabbitMQ over AMQP 0-9-1 (amqp://, amqps://, pyamqp://)
    AMQP = "amqp"


_SCHEMES = {
    "redis": BrokerKind.REDIS,
    "rediss": BrokerKind.REDIS,
    "unix": BrokerKind.REDIS,
    "amqp": BrokerKind.AMQP,
    "amqps": BrokerKind.AMQP,
    "pyamqp": BrokerKind.AMQP,
}


class UnsupportedBroker(ValueError):
    """Raised when the broker URL names a transport turnkeep does not run on."""


def broker_kind(url: str) -> BrokerKind:
    scheme = url.split("://", 1)[0].lower() if "://" in url else ""
    try:
        return _SCHEMES[scheme]
    except KeyError:
        raise UnsupportedBroker(
            f"broker scheme {scheme!r}: turnkeep runs on redis:// or amqp:// brokers"
        ) from None


def broker_priority(kind: BrokerKind, priority: int | None) -> int:
    """The message priority a turn's ``priority`` is sent with. Kombu's Redis transport
    takes 0 as its highest and keeps four steps (0, 3, 6, 9: a value joins the step at
    or below it), so 9 becomes 0 (ahead of everything), the default 5 becomes 4 (step
    3) and 0 becomes 9. RabbitMQ takes the highest first: the value as it is, on queues
    declared with ``x-max-priority`` 9."""
    value = DEFAULT_PRIORITY if priority is None else priority
    return value if kind is BrokerKind.AMQP else 9 - value


def celery_options(kind: BrokerKind) -> dict[str, Any]:
    """What this broker needs on top of the Celery settings every process shares."""
    if kind is BrokerKind.AMQP:
        # every queue Celery declares (the main one, a definition's, one a producer names
        # first) gets the same arguments: a declaration with other ones is refused
        return {"task_queue_max_priority": AMQP_MAX_PRIORITY}
    return {}


class QueueDepths:
    """Reads how many messages wait on queues; thread-safe, one connection kept."""

    def __init__(self, url: str, *, keyprefix: str = "") -> None:
        self.url = url
        self.kind = broker_kind(url)
        self.keyprefix = keyprefix
        self._lock = threading.Lock()
        self._redis: redis.Redis | None = None
        self._amqp: Connection | None = None

    def read(self, queues: list[str]) -> dict[str, int]:
        """The depth of each of ``queues`` (a queue never declared: 0); raises the
        broker's error when it does not answer."""
        with self._lock:
            if self.kind is BrokerKind.AMQP:
                return self._amqp_depths(queues)
            return self._redis_depths(queues)

    def _redis_depths(self, queues: list[str]) -> dict[str, int]:
        # a queue is lists: ``<queue>`` (step 0) and ``<queue>\x06\x16<n>`` for the others
        if self._redis is None:
            self._redis = redis.Redis.from_url(
                self.url, socket_timeout=DEPTH_TIMEOUT, socket_connect_timeout=DEPTH_TIMEOUT
            )
        pipe = self._redis.pipeline(transaction=False)
        for name in queues:
            queue = f"{self.keyprefix}{name}"
            for pri in PRIORITY_STEPS:
                pipe.llen(f"{queue}{RedisChannel.sep}{pri}" if pri else queue)
        counts = [int(n) for n in pipe.execute()]
        steps = len(PRIORITY_STEPS)
        return {q: sum(counts[i * steps : (i + 1) * steps]) for i, q in enumerate(queues)}

    def _amqp_depths(self, queues: list[str]) -> dict[str, int]:
        # (kombu is untyped: its calls are checked by the integration tests)
        if self._amqp is None:
            self._amqp = Connection(self.url, connect_timeout=DEPTH_TIMEOUT)  # type: ignore[no-untyped-call]
        conn: Any = self._amqp
        try:
            depths: dict[str, int] = {}
            channel = conn.channel()
            try:
                for name in queues:
                    try:
                        ok = channel.queue_declare(queue=name, passive=True)
                        depths[name] = int(ok.message_count)
                    except conn.channel_errors:
                        # not declared yet (404): nothing waits there; the error
                        # closed the channel, so the next queue gets a new one
                        depths[name] = 0
                        channel = conn.channel()
            finally:
                channel.close()
            return depths
        except Exception:
            self._amqp = None
            conn.release()
            raise

    def close(self) -> None:
        with self._lock:
            if self._redis is not None:
                self._redis.close()
                self._redis = None
            if self._amqp is not None:
                self._amqp.release()  # type: ignore[no-untyped-call]
                self._amqp = None
