"""Shared fixtures: tests cannot see each other's work.

Once per run a template database is migrated with Alembic and given the test agents'
tables; every test module then gets a database of its own cloned from it (``CREATE
DATABASE … TEMPLATE``, a fraction of a migration's cost), dropped after the module. A
module's turnkeep processes also get a Celery queue and a Redis namespace of their own
(``TURNKEEP_QUEUE`` and ``TURNKEEP_REDIS_PREFIX``, both the module database's name), so
a message or a lease an earlier module left never reaches a later one, and two test
runs on one machine share the Redis database without touching each other's keys (no
FLUSHDB: a module deletes its own keys when it ends). Within a module, tests isolate
by unique tenant and session ids.

Every turnkeep process of a module, and the tests' own ``store``, connect as the
application's role (``app_database_url``: row-level security binds it, as in a
deployment); ``database_url`` is the owner's (a superuser here), which migrates and
which the checkers use to see every tenant's rows.

Unit tests (tests/unit) touch none of this. No test reaches a model provider: the
provider env vars point at a closed local port unless a test sets its own server.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import re
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest
import redis

from turnkeep.store.new_turn import NewTurn

ROOT = Path(__file__).resolve().parent.parent


def _servers() -> tuple[str, str]:
    """The admin URL of the Postgres and the base URL of the Redis the run uses: the
    TURNKEEP_TEST_* ones when set, else the machine's on the local default addresses
    (TURNKEEP_LOCAL_POSTGRES, TURNKEEP_LOCAL_REDIS), else embedded servers from the
    turnkeep[embedded] wheels (turnkeep/embedded.py), started once for the run under
    TURNKEEP_EMBEDDED_DIR (default .run/embedded-test) and stopped at its end."""
    pg, rd = os.environ.get("TURNKEEP_TEST_PG"), os.environ.get("TURNKEEP_TEST_REDIS")
    if pg and rd:
        return pg, rd
    import atexit

    from turnkeep import embedded
    from turnkeep.runtime.local_settings import DevSettings

    dev = DevSettings()
    pg_addr, rd_addr = dev.local_postgres, dev.local_redis
    root = Path(dev.embedded_dir or ROOT / ".run" / "embedded-test")
    if not pg:
        if embedded.answers(pg_addr):
            pg = f"postgresql://postgres@{pg_addr}/postgres"
        else:
            server = embedded.EmbeddedPostgres(root)
            server.start()
            atexit.register(server.stop)
            pg = server.admin_url()
            print(f"\nturnkeep tests: embedded Postgres on 127.0.0.1:{server.port}")
    if not rd:
        if embedded.answers(rd_addr):
            rd = f"redis://{rd_addr}"
        else:
            server_r = embedded.EmbeddedRedis(root / "redis")
            server_r.start()
            atexit.register(server_r.stop)
            rd = f"redis://127.0.0.1:{server_r.port}"
            print(f"turnkeep tests: embedded Redis on 127.0.0.1:{server_r.port}")
    # subprocesses (CLI tests, private clusters) see the same choice
    os.environ["TURNKEEP_TEST_PG"], os.environ["TURNKEEP_TEST_REDIS"] = pg, rd
    return pg, rd


PG_ADMIN, REDIS_BASE = _servers()
#: the Celery broker the run's turnkeep processes use: RabbitMQ when TURNKEEP_TEST_BROKER
#: names one (``make test-amqp``), else each module's Redis (leases, live events and the
#: fair sets stay in Redis either way)
TEST_BROKER = os.environ.get("TURNKEEP_TEST_BROKER", "")


def broker_or(redis_url: str) -> str:
    """The broker of a process whose Redis is ``redis_url``: the run's RabbitMQ when
    there is one, else that Redis."""
    return TEST_BROKER or redis_url


REDIS_DB = int(os.environ.get("TURNKEEP_TEST_REDIS_DB", "9"))
#: ``user`` or ``user:password`` of the application's role (trust auth on this machine)
APP_USER = os.environ.get("TURNKEEP_TEST_APP_USER", "turnkeep_app")

# a global switch, as pydantic-ai has: nothing in the test run talks to a real provider
os.environ["TURNKEEP_OPENAI_BASE_URL"] = "http://127.0.0.1:9/v1"
os.environ["TURNKEEP_ANTHROPIC_BASE_URL"] = "http://127.0.0.1:9"


def _sqlalchemy_url(dbname: str) -> str:
    base = PG_ADMIN.rsplit("/", 1)[0].replace("postgresql://", "postgresql+psycopg://", 1)
    return f"{base}/{dbname}"


#: this run's id: its template database, and the prefix of its module databases
RUN = uuid.uuid4().hex[:8]
#: seconds a clone may wait for the template to be free (an autovacuum worker on it)
CLONE_PATIENCE = 10.0


def _admin() -> psycopg.Connection[tuple[object, ...]]:
    return psycopg.connect(PG_ADMIN, autocommit=True)


@pytest.fixture(scope="session")
def template_database() -> Iterator[str]:
    """This run's template: migrated to head, the test agents' tables made by the
    owner and granted to the application's role (the tools in the workers write them).
    Closed to connections once made, so nothing holds it while a module clones it."""
    from tests.agents import SCHEMA
    from turnkeep.runtime.settings import APP_ROLE
    from turnkeep.store.migrate import upgrade

    name = f"turnkeep_tmpl_{RUN}"
    with _admin() as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        upgrade(_sqlalchemy_url(name))  # its engine has no pool: nothing stays open
        with psycopg.connect(_sqlalchemy_url(name).replace("+psycopg", ""), autocommit=True) as c:
            c.execute(SCHEMA)
            c.execute(f"GRANT SELECT, INSERT ON test_tool_effects, test_tool_calls TO {APP_ROLE}")
        with _admin() as conn:
            conn.execute(f'ALTER DATABASE "{name}" WITH ALLOW_CONNECTIONS false')
        yield name
    finally:
        with _admin() as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


_modules = itertools.count(1)


@pytest.fixture(scope="module")
def module_name(request: pytest.FixtureRequest) -> str:
    """This module's name for what it owns: its database, its Celery queue and its
    Redis prefix. Unique to the run (``RUN``) and to the module in it."""
    stem = re.sub(r"[^a-z0-9]+", "_", request.module.__name__.rsplit(".", 1)[-1].lower())
    return f"turnkeep_test_{RUN}_{next(_modules)}_{stem}"[:63]


@contextlib.contextmanager
def _environ(env: dict[str, str]) -> Iterator[None]:
    """``env`` in this process's environment (and settings) for the block's length."""
    from turnkeep.runtime.settings import get_settings

    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    get_settings.cache_clear()
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        get_settings.cache_clear()


def _clone(template: str, name: str) -> None:
    """``CREATE DATABASE name TEMPLATE template``, again while another backend is
    still on the template (Postgres refuses then rather than wait)."""
    deadline = time.monotonic() + CLONE_PATIENCE
    with _admin() as conn:
        while True:
            try:
                conn.execute(f'CREATE DATABASE "{name}" TEMPLATE "{template}"')
                return
            except psycopg.errors.ObjectInUse:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)


@pytest.fixture(scope="module")
def database_url(module_name: str, template_database: str) -> Iterator[str]:
    """This module's database, cloned from the run's migrated template; dropped after
    the module."""
    _clone(template_database, module_name)
    yield _sqlalchemy_url(module_name)
    with _admin() as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{module_name}" WITH (FORCE)')


def app_url(url: str) -> str:
    """The same database as the application's role (``APP_USER``)."""
    parts = urlsplit(url)
    host = parts.netloc.rsplit("@", 1)[-1]
    return urlunsplit(parts._replace(netloc=f"{APP_USER}@{host}"))


@pytest.fixture(scope="module")
def app_database_url(database_url: str) -> str:
    """The module's database as the application's role: not a superuser nor the owner,
    so row-level security binds it (migration 0006 granted it the tables)."""
    return app_url(database_url)


@pytest.fixture(scope="module")
def redis_url(module_name: str) -> Iterator[str]:
    """The machine's Redis database, which the run shares with anything else on it, so
    never flushed: for the module's length every key this process builds (store/keys.py)
    is under a prefix of the module's own, and its keys are deleted after it."""
    url = f"{REDIS_BASE}/{REDIS_DB}"
    with _environ({"TURNKEEP_REDIS_PREFIX": module_name}):
        yield url
    client = redis.Redis.from_url(url)
    try:
        found = list(client.scan_iter(match=f"{module_name}:*", count=1000))
        for i in range(0, len(found), 1000):
            client.unlink(*found[i : i + 1000])
    finally:
        client.close()


@pytest.fixture(scope="module")
def service_env(
    module_name: str, database_url: str, app_database_url: str, redis_url: str
) -> Iterator[dict[str, str]]:
    """The environment a turnkeep process of this module gets: the application's role
    for its statements, the owner for migrations, and a queue and a Redis prefix of
    the module's own. This process's environment (and settings) too for the module's
    length, restored afterwards."""
    env = {
        "TURNKEEP_DATABASE_URL": app_database_url,
        "TURNKEEP_MIGRATE_URL": database_url,
        "TURNKEEP_REDIS_URL": redis_url,
        "TURNKEEP_REDIS_PREFIX": module_name,
        "TURNKEEP_QUEUE": module_name,
        # set only for RabbitMQ: unset, the broker is whichever Redis a test gives its
        # processes (a chaos scenario's private one)
        **({"TURNKEEP_BROKER_URL": TEST_BROKER} if TEST_BROKER else {}),
    }
    with _environ(env):
        yield env
    if TEST_BROKER:
        from tests.amqp import delete_module_queues

        delete_module_queues(TEST_BROKER, module_name)


@pytest.fixture(scope="module")
def store(service_env: dict[str, str]) -> Iterator[object]:
    from turnkeep.store.facade import Store

    s = Store.from_url(service_env["TURNKEEP_DATABASE_URL"], pool_size=20)
    yield s
    s.close()


@pytest.fixture
def tenant() -> str:
    return f"t-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def sid() -> str:
    return f"s-{uuid.uuid4().hex[:8]}"


# -- real worker processes ------------------------------------------------------

#: what every worker, beat and scan in the tests runs with: short TTLs so crash
#: recovery is quick, and the test agents
WORKER_ENV = {
    "TURNKEEP_AGENTS": "tests.agents",
    "TURNKEEP_LEASE_TTL": "2",
    "TURNKEEP_SCAN_INTERVAL": "1",
    "TURNKEEP_MAX_ATTEMPTS": "4",
    "TURNKEEP_WORKER_CONCURRENCY": "4",
}


@pytest.fixture(scope="module")
def effects_tables(database_url: str) -> None:
    """The test agents' tables (tests/agents.py): already in every module's database,
    cloned from the template (``template_database``) that made them."""


@pytest.fixture
def procs(
    request: pytest.FixtureRequest,
    service_env: dict[str, str],
    effects_tables: None,
    tmp_path: object,
) -> Iterator[object]:
    """Starts real celery workers/beat for one test; stops them; prints logs on failure."""
    from pathlib import Path

    from tests.procs import Procs

    logdir = Path(str(tmp_path))
    p = Procs(
        env={**service_env, **WORKER_ENV, "TURNKEEP_FAULTS_DIR": str(logdir / "faults")},
        logdir=logdir,
    )
    yield p
    p.stop_all()
    rep = getattr(request.node, "rep_call", None)
    if rep is not None and rep.failed:
        print(p.dump_logs())


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> object:
    rep = yield
    setattr(item, f"rep_{rep.when}", rep)
    return rep


class Client:
    """Admits turns straight through the store (the API has its own tests) and
    enqueues them as the API does: by task name, ids only."""

    def __init__(self, store: object, broker_url: str, queue: str | None = None) -> None:
        from celery import Celery

        from turnkeep.runtime.agents.registry import load_agents
        from turnkeep.store.brokers import broker_kind, celery_options
        from turnkeep.store.keys import broker_keyprefix, prefix

        self.store = store
        self.agents = load_agents("tests.agents")
        self.celery = Celery("turnkeep-tests", broker=broker_url)
        # the broker keys the module's workers read (store/keys.py), and the queue
        # arguments they declare with (RabbitMQ refuses a declaration with others)
        self.celery.conf.broker_transport_options = {"global_keyprefix": broker_keyprefix(prefix())}
        self.celery.conf.update(celery_options(broker_kind(broker_url)))
        self.queue = queue or os.environ["TURNKEEP_QUEUE"]

    def admit(
        self,
        tenant: str,
        sid: str,
        agent: str,
        text: str,
        *,
        turn_id: str | None = None,
        output_schema: dict[str, object] | None = None,
        budget: dict[str, object] | None = None,
        enqueue: bool = True,
        subject: str = "chaos",
    ) -> str:
        from turnkeep.runtime.hashing import input_hash

        a = self.agents.get(agent)
        messages = [{"role": "user", "content": text}]
        tid = turn_id or uuid.uuid4().hex
        self.store.turns.admit(
            NewTurn(
                tenant_id=tenant,
                session_id=sid,
                turn_id=tid,
                agent_name=agent,
                agent_hash=a.definition_hash,
                input_hash=input_hash(
                    messages=messages,
                    agent_hash=a.definition_hash,
                    output_schema=output_schema,
                    budget=budget,
                ),
                input={"messages": messages},
                output_schema=output_schema,
                budget=budget,
                submitted_by=subject,
            )
        )
        if enqueue:
            self.enqueue(tenant, sid)
        return tid

    def enqueue(self, tenant: str, sid: str) -> None:
        from turnkeep.runtime.names import TASK_RUN_SESSION

        self.celery.send_task(TASK_RUN_SESSION, args=[tenant, sid], queue=self.queue)

    def wait_terminal(self, tenant: str, sid: str, tid: str, timeout: float = 60) -> object:
        from tests.procs import wait_for

        def done() -> object:
            t = self.store.reads.get_turn(tenant, sid, tid)  # type: ignore[attr-defined]
            return t if t.state.terminal else None

        return wait_for(done, timeout, interval=0.1, what=f"turn {tid} terminal")


@pytest.fixture
def client(store: object, service_env: dict[str, str]) -> Client:
    return Client(store, broker_or(service_env["TURNKEEP_REDIS_URL"]))
