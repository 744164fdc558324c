"""Chaos-only fixtures: every scenario gets its own redis-server (so a flush, a restart
or a stray message of another test run never reaches it), and the ones that break
Postgres get their own cluster. Workers and beat come from the shared ``procs``.
"""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
import redis

from tests.conftest import Client, broker_or
from tests.invariants import check_all
from tests.procs import Proc, Procs, kill_group, wait_for
from turnkeep.api.auth import token_digest
from turnkeep.store.errors import Unavailable
from turnkeep.store.facade import Store
from turnkeep.store.keys import broker_keyprefix, prefix


@dataclass
class Chaos:
    """One scenario's world: processes, a private Redis, the store and a client."""

    procs: Procs
    store: Store
    database_url: str
    redis_url: str
    redis_port: int
    redis: redis.Redis
    redis_proc: Proc
    client: Client
    tenant: str
    accepted: list[tuple[str, str, str]] = field(default_factory=list)

    @property
    def queue(self) -> str:
        """The queue this module's turnkeep messages go to (TURNKEEP_QUEUE)."""
        return str(self.client.queue)

    def broker_key(self, name: str) -> str:
        """Kombu's Redis key ``name`` (``unacked``, a queue's list) under this run's
        prefix (store/keys.py)."""
        return broker_keyprefix(prefix()) + name

    @property
    def queue_list(self) -> str:
        """The Redis list the queue's messages wait in (the tests' own enqueues: no
        priority)."""
        return self.broker_key(self.queue)

    def queued(self) -> int:
        """Messages waiting on the queue, at every priority step (a worker's and the
        API's enqueues carry one: store/producer.py), on whichever broker it is."""
        from turnkeep.store.brokers import QueueDepths

        depths = QueueDepths(self.client.celery.conf.broker_url, keyprefix=self.broker_key(""))
        try:
            return depths.read([self.queue])[self.queue]
        finally:
            depths.close()

    def admit(self, sid: str, text: str, agent: str = "counter", **kw: Any) -> str:
        tid = self.client.admit(self.tenant, sid, agent, text, **kw)
        self.accepted.append((self.tenant, sid, tid))
        return tid

    def wait_terminal(self, sid: str, tid: str, timeout: float = 60) -> Any:
        return self.client.wait_terminal(self.tenant, sid, tid, timeout=timeout)

    def wait_all_terminal(self, timeout: float = 120) -> None:
        def pending() -> list[tuple[str, str, str]]:
            return [k for k in self.accepted if not self.store.reads.get_turn(*k).state.terminal]

        left: list[tuple[str, str, str]] = []

        def done() -> bool:
            try:
                left[:] = pending()
            except Unavailable:  # a pooled connection a Postgres restart killed
                return False
            return not left

        try:
            wait_for(done, timeout, interval=0.2, what="every accepted turn terminal")
        except AssertionError as exc:
            raise AssertionError(f"{exc}; still active: {left[:10]}") from None

    def check(self, **kw: Any) -> list[str]:
        return check_all(
            self.database_url,
            tenants=[self.tenant],
            accepted=self.accepted,
            redis_client=self.redis,
            **kw,
        )

    def api(self, extra: dict[str, str] | None = None) -> ApiHandle:
        """``uvicorn turnkeep.api.app:app`` as a subprocess with a token for this tenant."""
        token = f"chaos-{uuid.uuid4().hex}"
        tokens = [{"sha256": token_digest(token), "tenant": self.tenant, "subject": "chaos"}]
        proc = self.procs.api({"TURNKEEP_TOKENS": json.dumps(tokens), **(extra or {})})
        return ApiHandle(proc, token)


@dataclass
class ApiHandle:
    proc: Proc
    token: str

    @property
    def url(self) -> str:
        return self.proc.url

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}


def turn_body(text: str, agent: str = "counter") -> dict[str, Any]:
    return {"agent": agent, "input": [{"role": "user", "content": text}]}


def _private_redis(procs: Procs) -> tuple[int, str, redis.Redis, Proc]:
    proc = procs.redis_server()
    port = proc.port
    url = f"redis://127.0.0.1:{port}/0"
    procs.env["TURNKEEP_REDIS_URL"] = url
    return port, url, redis.Redis(port=port, socket_timeout=5), proc


def kill_turnkeep_processes(procs: Procs) -> None:
    """SIGKILL what the scenario started but the servers: nothing is asserted after a
    test, so the warm shutdown ``Procs.stop`` waits for is only time lost (about 2 s
    a worker). A prefork worker's children go with its process group."""
    for proc in procs.started:
        if proc.name != "redis" and proc.alive():
            kill_group(proc.pid)
            proc.popen.wait(10)


@pytest.fixture
def chaos(procs: Procs, store: Store, database_url: str, tenant: str) -> Iterator[Chaos]:
    """The shared test database, a private Redis (broker, leases, channel)."""
    port, url, client, proc = _private_redis(procs)
    broker = Client(store, broker_or(url))
    yield Chaos(procs, store, database_url, url, port, client, proc, broker, tenant)
    kill_turnkeep_processes(procs)
    client.close()


@pytest.fixture
def private_pg() -> Iterator[Any]:
    """A private, migrated Postgres cluster this test may stop and start."""
    from tests.chaos.pgcluster import PgCluster

    cluster = PgCluster()
    try:
        cluster.migrate()
        yield cluster
    finally:
        cluster.destroy()


@pytest.fixture
def pg_chaos(procs: Procs, private_pg: Any, tenant: str) -> Iterator[Chaos]:
    """Like ``chaos``, but every process (and the test's store) uses a private Postgres."""
    url = private_pg.url()
    procs.env["TURNKEEP_DATABASE_URL"] = url
    port, rurl, client, proc = _private_redis(procs)
    store = Store.from_url(url, pool_size=5)
    yield Chaos(procs, store, url, rurl, port, client, proc, Client(store, rurl), tenant)
    kill_turnkeep_processes(procs)  # before the cluster goes away
    store.close()
    client.close()


class Supervisor:
    """``Restart=always`` for workers, as deploy/systemd runs them: a worker process
    that exited (killed, or crashed) is started again with the same arguments.
    Bounded: at most ``max_restarts`` restarts in all."""

    def __init__(self, procs: Procs, *, max_restarts: int = 200, interval: float = 0.5) -> None:
        self.procs = procs
        self.max_restarts = max_restarts
        self.interval = interval
        self.slots: list[tuple[dict[str, Any], Proc]] = []
        self.restarts: list[str] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="supervisor", daemon=True)
        self._thread.start()

    def worker(self, extra: dict[str, str] | None = None, **kw: Any) -> int:
        """Start a supervised worker; returns its slot."""
        args = {"extra": extra, **kw}
        proc = self.procs.worker(**args)
        with self._lock:
            self.slots.append((args, proc))
            return len(self.slots) - 1

    def proc(self, slot: int) -> Proc:
        with self._lock:
            return self.slots[slot][1]

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            with self._lock:
                for i, (args, proc) in enumerate(self.slots):
                    if proc.alive() or len(self.restarts) >= self.max_restarts:
                        continue
                    why = f"slot {i} pid {proc.pid} exited {proc.popen.returncode}"
                    self.restarts.append(why)
                    self.slots[i] = (args, self.procs.worker(**{**args, "wait_ready": False}))

    def stop(self) -> list[str]:
        self._stop.set()
        self._thread.join(30)
        return self.restarts


@pytest.fixture
def supervisor(procs: Procs) -> Iterator[Supervisor]:
    sup = Supervisor(procs)
    yield sup
    sup.stop()


def signalled(proc: Proc, sig: int) -> Callable[[], bool]:
    """A predicate: ``proc`` ended by ``sig``."""
    return lambda: proc.popen.poll() == -sig


@dataclass
class Partitioned:
    """A world with one network namespace: ``inside`` is the env of a worker started
    in it (``wrap=netns.wrap``), reaching Redis and Postgres over their own links."""

    chaos: Chaos
    netns: Any
    pg: Any
    inside: dict[str, str]


@pytest.fixture
def partitioned(procs: Procs, tenant: str) -> Iterator[Partitioned]:
    """A namespace, a private Postgres and Redis listening on 127.0.0.1 and on the
    host end of their links. Finalizers remove the namespace even on failure."""
    from tests.chaos.netns import NetNs
    from tests.chaos.pgcluster import PgCluster

    ns = NetNs.create()
    pg = None
    try:
        pg = PgCluster(listen=("127.0.0.1", ns.host_ip("postgres")))
        pg.migrate()
        procs.env["TURNKEEP_DATABASE_URL"] = pg.url()
        rproc = procs.redis_server(bind=f"127.0.0.1 {ns.host_ip('redis')}")
        port = rproc.port
        rurl = f"redis://127.0.0.1:{port}/0"
        procs.env["TURNKEEP_REDIS_URL"] = rurl
        rclient = redis.Redis(port=port, socket_timeout=5)
        store = Store.from_url(pg.url(), pool_size=5)
        chaos = Chaos(
            procs, store, pg.url(), rurl, port, rclient, rproc, Client(store, rurl), tenant
        )
        inside = {
            "TURNKEEP_REDIS_URL": f"redis://{ns.host_ip('redis')}:{port}/0",
            "TURNKEEP_DATABASE_URL": pg.url(host=ns.host_ip("postgres")),
        }
        yield Partitioned(chaos, ns, pg, inside)
        for service in ns.links:
            ns.heal(service)
        kill_turnkeep_processes(procs)
        store.close()
        rclient.close()
    finally:
        for proc in procs.started:  # nothing may outlive the namespace it runs in
            if proc.alive():
                proc.popen.kill()
                proc.popen.wait(10)
        ns.destroy()
        if pg is not None:
            pg.destroy()
