"""Per-process resources of a worker: one store, one Redis client, one registry.

Built lazily on first use, once, under a lock: the threads pool runs many sessions
in one process and they share the pools.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import uuid
from dataclasses import dataclass
from functools import cached_property

import redis

from turnkeep.runtime.agents.registry import AgentRegistry, load_agents
from turnkeep.runtime.obs import redact
from turnkeep.runtime.settings import Settings, get_settings
from turnkeep.store.channel import BackgroundPublisher
from turnkeep.store.errors import Unavailable
from turnkeep.store.facade import Store
from turnkeep.store.fair import FairQueue
from turnkeep.store.fleet import Fleet, definition_queue
from turnkeep.store.held import HeldSessions, Scope
from turnkeep.store.lease import Lease, LeaseManager
from turnkeep.store.pacer import Pacer
from turnkeep.store.producer import Producer
from turnkeep.store.secrets import SecretBox
from turnkeep.worker.heartbeat import Heartbeat, PostgresProbe
from turnkeep.worker.max_running import TenantLimitsCache

log = logging.getLogger(__name__)


@dataclass
class WorkerResources:
    settings: Settings

    @cached_property
    def store(self) -> Store:
        # threads hold a connection for one statement, never across a model or tool
        # call, so a pool far smaller than the thread count serves them; what it bounds
        # is the Postgres connection budget (processes x db_pool_size)
        # window_rows: the context window start_turn reads is the one journal
        # retention keeps (TURNKEEP_CONTEXT_WINDOW_ROWS), so the two never disagree
        return Store.from_url(
            self.settings.database.url,
            pool_size=self.settings.database.pool_size,
            window_rows=self.settings.retention.context_window_rows,
        )

    @cached_property
    def redis(self) -> redis.Redis:
        return redis.Redis.from_url(
            self.settings.redis.url,
            socket_timeout=5,
            socket_connect_timeout=5,
            health_check_interval=10,
        )

    @cached_property
    def leases(self) -> LeaseManager:
        return LeaseManager(self.redis, ttl=self.settings.lease.ttl)

    @cached_property
    def publisher(self) -> BackgroundPublisher:
        return BackgroundPublisher(self.redis)

    @cached_property
    def pacer(self) -> Pacer:
        return Pacer(self.redis)

    @cached_property
    def secrets(self) -> SecretBox:
        return SecretBox(self.redis)

    @cached_property
    def redactor(self) -> redact.Redactor:
        """The process's one redactor (worker/app.py installs it for the log records too)."""
        return redact.current()

    @cached_property
    def agents(self) -> AgentRegistry:
        return load_agents(self.settings.worker.agents)

    @cached_property
    def producer(self) -> Producer:
        return Producer.from_settings(self.settings)

    def enqueue(self, tenant_id: str, session_id: str) -> None:
        """Enqueue ``run_session`` by name, ids only, through the producer the API uses."""
        self.producer.enqueue(tenant_id, session_id)

    def wake(self, tenant_id: str, session_id: str, after: float) -> None:
        """Enqueue ``run_session`` with a countdown: the message waits in the broker (a
        worker holds it unacknowledged, no thread) until then."""
        self.producer.enqueue(tenant_id, session_id, countdown=after)

    @cached_property
    def fair(self) -> FairQueue:
        return FairQueue(self.redis, self.settings.broker.queue)

    def pick(self, tenant_id: str, session_id: str) -> tuple[str, str]:
        """The session a fair ticket sent for (tenant_id, session_id) runs: the next in
        the tenants' rotation (store/fair.py), or its own when none waits or Redis
        cannot say."""
        try:
            return self.fair.pick() or (tenant_id, session_id)
        except redis.RedisError as exc:
            log.warning("fair pick failed (%s); running the ticket's own", type(exc).__name__)
            return tenant_id, session_id

    @cached_property
    def tenant_limits(self) -> TenantLimitsCache:
        return TenantLimitsCache(self.store, self.settings.limits.max_running_per_tenant)

    def tenant_max_running(self, tenant_id: str) -> int | None:
        return self.tenant_limits.max_running(tenant_id)

    @cached_property
    def held(self) -> HeldSessions:
        return HeldSessions(self.redis)

    def hold(self, tenant_id: str, session_id: str, agent: str | None, since: float) -> None:
        try:
            self.held.hold(Scope(tenant_id, agent), session_id, since)
        except redis.RedisError as exc:  # the scan wakes what was not held
            log.warning("held session not recorded (%s)", type(exc).__name__)

    def wake_held(self, tenant_id: str, agent: str) -> None:
        for scope in (Scope(tenant_id), Scope(tenant_id, agent)):
            try:
                session = self.held.wake(scope, self.store.max_running.waiting_heads)
            except (redis.RedisError, Unavailable) as exc:  # the scan's wake covers it
                log.warning("held session not woken (%s)", type(exc).__name__)
                return
            if session is not None:
                self.enqueue(tenant_id, session)

    def started_held(self, tenant_id: str, session_id: str, agent: str, room: bool) -> None:
        try:
            self.held.leave(tenant_id, session_id, agent)
        except redis.RedisError as exc:  # a wake that finds it started drops it
            log.warning("started session not taken out of the held sets (%s)", type(exc).__name__)
        if room:
            self.wake_held(tenant_id, agent)

    @cached_property
    def fleet(self) -> Fleet:
        return Fleet(self.redis)

    def live_definitions(self) -> tuple[set[str], set[str]]:
        return self.fleet.served()

    def hand_on(self, tenant_id: str, session_id: str, agent_hash: str) -> None:
        queue = definition_queue(self.settings.broker.queue, agent_hash)
        self.producer.enqueue(tenant_id, session_id, queue=queue)

    def deliver_webhook(self, tenant_id: str, session_id: str, turn_id: str) -> None:
        """Send a settled turn's prompt webhook delivery (best effort: beat's pass is
        the safety net)."""
        self.producer.deliver_webhook(tenant_id, session_id, turn_id)

    def advance_experiment(self, tenant_id: str, experiment_id: str) -> None:
        """Send an experiment's advance now that one of its turns settled or parked
        (best effort: beat's pass is the safety net)."""
        self.producer.advance_experiment(tenant_id, experiment_id)

    def heartbeat(self, lease: Lease, *, granted_at: float) -> Heartbeat:
        """Start keeping ``lease`` alive (the process's one lease-keeper thread)."""
        probe = self.postgres_probe.start()
        return Heartbeat(self.leases, lease, granted_at=granted_at, probe=probe).start()

    @cached_property
    def postgres_probe(self) -> PostgresProbe:
        """The process's Postgres probe (worker/heartbeat.py), a round trip every TTL/3
        over a connection of its own, never the pool's: a ping stuck on a silent
        network holds no pool slot, and gives up after a TTL unacknowledged
        (``tcp_user_timeout``) so that the probe dials again."""
        ttl = self.settings.lease.ttl
        url = self.settings.database.url
        url += ("&" if "?" in url else "?") + f"tcp_user_timeout={max(1, int(ttl * 1000))}"
        return PostgresProbe(Store.from_url(url, pool_size=1).ping, interval=ttl / 3.0)

    def reaches_postgres(self) -> bool:
        """False once the probe has heard nothing from Postgres for over a lease TTL."""
        return self.postgres_probe.start().silent_for() <= self.settings.lease.ttl

    @cached_property
    def owner_prefix(self) -> str:
        # host, pid and a random part: unique per process, readable in the lease value
        return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"


_lock = threading.Lock()
_resources: WorkerResources | None = None
_resources_pid = 0


def resources() -> WorkerResources:
    """This process's resources, built on first use."""
    global _resources, _resources_pid
    with _lock:
        if _resources is not None and _resources_pid != os.getpid():
            # a prefork pool child forked after its parent used them (the
            # start-up scan) must not share the parent's pooled Postgres connections:
            # two processes on one socket read each other's results. Drop them without
            # closing them (they are the parent's), and build this process's own.
            # (the store's pool notices the new pid by itself and never closes them)
            _resources = None
        if _resources is None:
            _resources = WorkerResources(get_settings())
            _resources_pid = os.getpid()
        return _resources
