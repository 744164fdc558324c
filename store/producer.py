"""The one producer of ``run_session`` messages (and of a settled turn's prompt webhook
delivery), and the Celery settings every turnkeep process shares (STYLE.md #16: build
each shared thing once).

Who sends: the API after an admission or an answer, the worker after a release, the
recovery scan. All of them go through ``Producer``; the worker's Celery app *is* the
producer's app, with the worker-only settings added on top (worker/app.py), so the
two sides cannot drift apart on the serializer, the queue or the task name.

The message is the task name (runtime/names.py) and ids only,
``(tenant_id, session_id)``: never the input. A lost enqueue (broker down) is not an
error for the caller: the turn is committed, and the recovery scan finds it and
enqueues it again. So a send gives up after a few quick tries, and only the error's
type is ever logged (the broker URL may hold a password).

Imports nothing of ``api`` or ``worker``: both use it. So both read the backlog
through it (``Backlog``): the queue's depth on the broker and the active turns, the
gauges the API's and every worker's /metrics show (docs/operations.md).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from typing import Any

import redis
from celery import Celery
from prometheus_client.core import GaugeMetricFamily, Metric

from turnkeep.runtime.names import (
    TASK_ADVANCE_EXPERIMENT,
    TASK_DELIVER_WEBHOOKS,
    TASK_ERASE_SESSION,
    TASK_RUN_SESSION,
)
from turnkeep.runtime.settings import Settings
from turnkeep.runtime.states import PARKED_STATES
from turnkeep.store import transport
from turnkeep.store.brokers import (
    BrokerKind,
    QueueDepths,
    broker_kind,
    broker_priority,
    celery_options,
)
from turnkeep.store.facade import Store
from turnkeep.store.fair import FairQueue
from turnkeep.store.keys import broker_keyprefix

log = logging.getLogger(__name__)

#: a down broker must not hold a request's (or a worker thread's) time for long: a
#: few quick tries, then it is the recovery scan's job
PUBLISH_RETRY_POLICY: dict[str, float] = {
    "max_retries": 2,
    "interval_start": 0,
    "interval_step": 0.2,
    "interval_max": 0.5,
}
#: seconds to connect to the broker before a try counts as failed
BROKER_CONNECTION_TIMEOUT = 2.0
#: brokers whose deliveries go through the fair ready sets (store/fair.py); kombu's
#: in-memory one (unit tests) sends straight
FAIR_BROKERS = frozenset({BrokerKind.REDIS, BrokerKind.AMQP})


def celery_config(settings: Settings) -> dict[str, Any]:
    """The Celery settings of every turnkeep app: what a producer needs, and what the
    worker must agree with (it adds its own on top)."""
    kind = _kind(settings.effective_broker_url)
    return {
        "broker_url": settings.effective_broker_url,
        "task_default_queue": settings.broker.queue,
        "task_serializer": "json",
        "accept_content": ["json"],
        "task_publish_retry": True,
        "task_publish_retry_policy": dict(PUBLISH_RETRY_POLICY),
        "broker_connection_timeout": BROKER_CONNECTION_TIMEOUT,
        # kombu's keys in the deployment's Redis namespace (store/keys.py; unused but
        # harmless on RabbitMQ, whose queues the queue name keeps apart)
        "broker_transport_options": {"global_keyprefix": broker_keyprefix(settings.redis.prefix)},
        **({} if kind is None else celery_options(kind)),
        # no Celery results: a turn's outcome is in Postgres. And the (disabled) result
        # backend built once per app, not once per thread: Celery builds it by scanning
        # every installed distribution's entry points, which a worker of 256 threads did
        # 256 times, CPU-bound, while its first turns waited (bench inflight --py-spy)
        "task_ignore_result": True,
        "result_backend_thread_safe": True,
    }


def _kind(url: str) -> BrokerKind | None:
    """The broker a URL names; None for kombu's in-memory transport (unit tests)."""
    return None if url.startswith("memory://") else broker_kind(url)


def celery_app(settings: Settings) -> Celery:
    """A Celery app with ``celery_config``; not made the current app."""
    # a Redis broker through kombu's transport with one client per channel, not one
    # per operation (store/transport.py), installed before the app's first connection
    transport.install()
    app = Celery("turnkeep", set_as_current=False)
    app.conf.update(celery_config(settings))
    # built here, once, before any thread can race to build its own (celery_config)
    _ = app.backend
    return app


_lock = threading.Lock()
#: the process's producers, by (broker URL, queue, Redis URL, Redis prefix)
_producers: dict[tuple[str, str, str, str], Producer] = {}


class Producer:
    """Sends ``run_session(tenant_id, session_id)`` to the queue by task name: through
    the fair ready sets (``fair``, store/fair.py) unless it names its queue or a delay.

    Thread-safe. One Celery app, so one broker connection pool, per producer; use
    ``from_settings`` to get the process's one producer rather than building more.
    """

    def __init__(self, app: Celery, queue: str, *, fair: FairQueue | None = None) -> None:
        self.app = app
        self.queue = queue
        self.fair = fair
        url = str(app.conf.broker_url or "")
        self.kind = _kind(url)
        options = app.conf.broker_transport_options or {}
        self._depths = (
            None
            if self.kind is None
            else QueueDepths(url, keyprefix=str(options.get("global_keyprefix", "")))
        )

    @classmethod
    def from_settings(cls, settings: Settings) -> Producer:
        """The process's producer for the settings' broker, queue and prefix: built on the
        first call, the same object on every later one (the worker's Celery app is
        this producer's app, see worker/app.py)."""
        url = settings.effective_broker_url
        key = (url, settings.broker.queue, settings.redis.url, settings.redis.prefix)
        with _lock:
            producer = _producers.get(key)
            if producer is None:
                fair = None
                if _kind(url) in FAIR_BROKERS:
                    client = redis.Redis.from_url(
                        settings.redis.url, socket_timeout=2, socket_connect_timeout=2
                    )
                    fair = FairQueue(client, settings.broker.queue)
                producer = _producers[key] = cls(
                    celery_app(settings), settings.broker.queue, fair=fair
                )
            return producer

    def send(
        self,
        tenant_id: str,
        session_id: str,
        *,
        queue: str | None = None,
        priority: int | None = None,
        countdown: float | None = None,
    ) -> None:
        """Send the task at ``priority`` (``broker_priority``): as a fair ticket
        (store/fair.py) to the settings' queue; straight, for this session alone, to
        ``queue`` (a definition's queue hands a session to the workers that serve it,
        store/fleet.py) or after ``countdown`` seconds (a paced turn's slot:
        worker/pace.py; a delivery that must not run before its time, which a ticket
        taken earlier would). Raises the broker's error once the quick retries are
        spent."""
        fair = queue is None and countdown is None and self._submit(tenant_id, session_id, priority)
        self.app.send_task(
            TASK_RUN_SESSION,
            args=[tenant_id, session_id],
            kwargs={"fair": True} if fair else None,
            queue=queue or self.queue,
            priority=broker_priority(self.kind or BrokerKind.REDIS, priority),
            countdown=countdown,
        )

    def _submit(self, tenant_id: str, session_id: str, priority: int | None) -> bool:
        """Whether the session is in its tenant's ready set; when Redis cannot say, the
        message goes straight (it then runs its own session, first come first served)."""
        if self.fair is None:
            return False
        try:
            self.fair.submit(tenant_id, session_id, priority)
        except redis.RedisError as exc:
            log.warning("fair submit failed (%s); sent straight", type(exc).__name__)
            return False
        return True

    def enqueue(
        self,
        tenant_id: str,
        session_id: str,
        *,
        queue: str | None = None,
        priority: int | None = None,
        countdown: float | None = None,
    ) -> bool:
        """Send the task; False (logged by error type only, never raised) when the
        broker refused it: the recovery scan will enqueue the session again."""
        try:
            self.send(tenant_id, session_id, queue=queue, priority=priority, countdown=countdown)
        except Exception as exc:  # broker down or misconfigured
            log.warning(
                "enqueue of run_session failed (%s); recovery will retry it", type(exc).__name__
            )
            return False
        return True

    def erase(self, tenant_id: str, session_id: str) -> bool:
        """Send a session's erasure (ids only, docs/erasure.md); False (logged by error
        type, never raised) when the broker refused it: beat's erasure sweep finds
        the tombstone unfinished and sends it again."""
        try:
            self.app.send_task(TASK_ERASE_SESSION, args=[tenant_id, session_id], queue=self.queue)
        except Exception as exc:  # broker down or misconfigured
            log.warning(
                "enqueue of an erasure failed (%s); the sweep will send it", type(exc).__name__
            )
            return False
        return True

    def deliver_webhook(self, tenant_id: str, session_id: str, turn_id: str) -> bool:
        """Send the prompt delivery of a settled turn's webhook (ids only); False
        (logged by error type, never raised) when the broker refused it: beat's
        delivery pass finds the webhook anyway."""
        try:
            self.app.send_task(
                TASK_DELIVER_WEBHOOKS, args=[tenant_id, session_id, turn_id], queue=self.queue
            )
        except Exception as exc:  # broker down or misconfigured
            log.warning(
                "enqueue of a webhook delivery failed (%s); beat will deliver it",
                type(exc).__name__,
            )
            return False
        return True

    def advance_experiment(self, tenant_id: str, experiment_id: str) -> bool:
        """Have a worker advance an experiment now (ids only: recovery/experiments.py);
        False (logged by error type, never raised) when the broker refused it: beat's
        pass advances it within ``TURNKEEP_EVAL_INTERVAL``."""
        try:
            self.app.send_task(
                TASK_ADVANCE_EXPERIMENT, args=[tenant_id, experiment_id], queue=self.queue
            )
        except Exception as exc:  # broker down or misconfigured
            log.warning("enqueue of an experiment's advance failed (%s)", type(exc).__name__)
            return False
        return True

    def queue_depth(self) -> int | None:
        """Messages waiting on the queue (store/brokers.py ``QueueDepths``: a Redis
        broker's lists, RabbitMQ's ready count); None on kombu's in-memory broker."""
        depths = self.queue_depths([self.queue])
        return None if depths is None else depths[self.queue]

    def queue_depths(self, queues: list[str]) -> dict[str, int] | None:
        """``queue_depth`` of each of ``queues``, in one round trip (one per queue on
        RabbitMQ)."""
        return None if self._depths is None else self._depths.read(queues)

    def close(self) -> None:
        """Close the broker connections; the next ``from_settings`` builds anew."""
        with _lock:
            for key, producer in list(_producers.items()):
                if producer is self:
                    del _producers[key]
        if self._depths is not None:
            self._depths.close()
        if self.fair is not None:
            self.fair.redis.close()
        self.app.close()


#: seconds one reading of the backlog serves scrapes for
BACKLOG_TTL = 2.0


class Backlog:
    """What waits to be worked on, as Prometheus gauges read at scrape time (a
    collector: ``registry.register(backlog)``):

    - ``turnkeep_queue_depth``: messages waiting on the broker's queue;
    - ``turnkeep_turns_waiting{agent,state}``: turns parked on someone's answer
      (``waiting``, ``needs_reconciliation``);
    - ``turnkeep_turns_runnable{agent,state}``: turns a worker can step (``queued``,
      ``running``).

    Both are the deployment's, not the process's: every process shows the same
    values (aggregate with ``max``, not ``sum``). One reading (a Redis pipeline and
    one Postgres statement) serves every scrape for ``ttl`` seconds. A part that
    cannot be read is left out of that scrape; a label set seen before and gone now
    reads 0.
    """

    def __init__(self, producer: Producer, store: Store, *, ttl: float = BACKLOG_TTL) -> None:
        self.producer = producer
        self.store = store
        self.ttl = ttl
        self._lock = threading.Lock()
        self._read_at = -ttl
        self._depth: int | None = None
        self._turns: dict[tuple[str, str], int] | None = None
        self._seen: set[tuple[str, str]] = set()

    def read(self) -> tuple[int | None, dict[tuple[str, str], int] | None]:
        """(queue depth, active turns by (agent, state)), None for a part that could
        not be read; at most one reading per ``ttl``."""
        with self._lock:
            if time.monotonic() - self._read_at >= self.ttl:
                self._depth, self._turns = self._depth_now(), self._turns_now()
                self._read_at = time.monotonic()
            return self._depth, self._turns

    def _depth_now(self) -> int | None:
        try:
            return self.producer.queue_depth()
        except Exception as exc:  # the broker is out of reach: no gauge this scrape
            log.debug("queue depth not read: %s", type(exc).__name__)
            return None

    def _turns_now(self) -> dict[tuple[str, str], int] | None:
        try:
            counts = self.store.scans.active_turn_counts()
        except Exception as exc:  # Postgres is out of reach: no gauge this scrape
            log.debug("active turns not counted: %s", type(exc).__name__)
            return None
        self._seen |= counts.keys()
        return {**dict.fromkeys(self._seen, 0), **counts}

    def describe(self) -> list[Metric]:
        return []  # known only at scrape time

    def collect(self) -> Iterator[Metric]:
        depth, turns = self.read()
        if depth is not None:
            yield GaugeMetricFamily(
                "turnkeep_queue_depth", "Messages waiting on the Celery queue", value=depth
            )
        if turns is None:
            return
        waiting = GaugeMetricFamily(
            "turnkeep_turns_waiting",
            "Turns parked on an answer (waiting, needs_reconciliation), by agent and state",
            labels=["agent", "state"],
        )
        runnable = GaugeMetricFamily(
            "turnkeep_turns_runnable",
            "Turns a worker can step (queued, running), by agent and state",
            labels=["agent", "state"],
        )
        parked = {s.value for s in PARKED_STATES}
        for (agent, state), n in sorted(turns.items()):
            (waiting if state in parked else runnable).add_metric([agent, state], n)
        yield waiting
        yield runnable
