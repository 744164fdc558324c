"""Shared fixtures: one fresh Postgres database per test run, migrated with Alembic,
and one Redis database, flushed at the start. Tests isolate from each other by
unique tenant and session ids, not by resetting services between tests.

Every turnkeep process of the run, and the tests' own ``store``, connect as the
application's role (``app_database_url``: row-level security binds it, as in a
deployment); ``database_url`` is the owner's (a superuser here), which migrates and
which the checkers use to see every tenant's rows.

Unit tests (tests/unit) touch none of this. No test reaches a model provider: the
provider env vars point at a closed local port unless a test sets its own server.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest
import redis

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

    pg_addr = os.environ.get("TURNKEEP_LOCAL_POSTGRES", embedded.LOCAL_POSTGRES)
    rd_addr = os.environ.get("TURNKEEP_LOCAL_REDIS", embedded.LOCAL_REDIS)
    root = Path(os.environ.get("TURNKEEP_EMBEDDED_DIR") or ROOT / ".run" / "embedded-test")
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
REDIS_DB = int(os.environ.get("TURNKEEP_TEST_REDIS_DB", "9"))
#: ``user`` or ``user:password`` of the application's role (trust auth on this machine)
APP_USER = os.environ.get("TURNKEEP_TEST_APP_USER", "turnkeep_app")

# a global switch, as pydantic-ai has: nothing in the test run talks to a real provider
os.environ["TURNKEEP_OPENAI_BASE_URL"] = "http://127.0.0.1:9/v1"
os.environ["TURNKEEP_ANTHROPIC_BASE_URL"] = "http://127.0.0.1:9"


def _sqlalchemy_url(dbname: str) -> str:
    base = PG_ADMIN.rsplit("/", 1)[0].replace("postgresql://", "postgresql+psycopg://", 1)
    return f"{base}/{dbname}"


@pytest.fixture(scope="session")
def database_url() -> Iterator[str]:
    """A new database for this run, migrated to head; dropped afterwards."""
    from store.migrate import upgrade

    name = f"turnkeep_test_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    url = _sqlalchemy_url(name)
    upgrade(url)
    yield url
    with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def app_url(url: str) -> str:
    """The same database as the application's role (``APP_USER``)."""
    parts = urlsplit(url)
    host = parts.netloc.rsplit("@", 1)[-1]
    return urlunsplit(parts._replace(netloc=f"{APP_USER}@{host}"))


@pytest.fixture(scope="session")
def app_database_url(database_url: str) -> str:
    """The run's database as the application's role: not a superuser nor the owner,
    so row-level security binds it (migration 0006 granted it the tables)."""
    return app_url(database_url)


@pytest.fixture(scope="session")
def redis_url() -> str:
    url = f"{REDIS_BASE}/{REDIS_DB}"
    redis.Redis.from_url(url).flushdb()
    return url


@pytest.fixture(scope="session")
def service_env(database_url: str, app_database_url: str, redis_url: str) -> dict[str, str]:
    """The environment a turnkeep process of this test run gets: the application's
    role for its statements, the owner for migrations."""
    env = {
        "TURNKEEP_DATABASE_URL": app_database_url,
        "TURNKEEP_MIGRATE_URL": database_url,
        "TURNKEEP_REDIS_URL": redis_url,
        # a queue of this run's own: another test run on the machine's Redis must
        # not take this run's messages (and run them against its own database)
        "TURNKEEP_QUEUE": f"turnkeep-test-{uuid.uuid4().hex[:8]}",
    }
    os.environ.update(env)
    from runtime.settings import get_settings

    get_settings.cache_clear()
    return env


@pytest.fixture(scope="session")
def store(service_env: dict[str, str]) -> Iterator[object]:
    from store.transitions import Store

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


@pytest.fixture(scope="session")
def effects_tables(service_env: dict[str, str], database_url: str) -> None:
    """The test agents' tables (tests/agents.py), made by the owner, written by the
    tools in the workers as the application's role."""
    from runtime.settings import APP_ROLE
    from tests.agents import SCHEMA

    url = database_url.replace("postgresql+psycopg://", "postgresql://")
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(SCHEMA)
        conn.execute(f"GRANT SELECT, INSERT ON test_tool_effects, test_tool_calls TO {APP_ROLE}")


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

        from runtime.definitions import load_agents

        self.store = store
        self.agents = load_agents("tests.agents")
        self.celery = Celery("turnkeep-tests", broker=broker_url)
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
        from runtime.hashing import input_hash

        a = self.agents.get(agent)
        messages = [{"role": "user", "content": text}]
        tid = turn_id or uuid.uuid4().hex
        self.store.admit(  # type: ignore[attr-defined]
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
        if enqueue:
            self.enqueue(tenant, sid)
        return tid

    def enqueue(self, tenant: str, sid: str) -> None:
        from runtime.names import TASK_RUN_SESSION

        self.celery.send_task(TASK_RUN_SESSION, args=[tenant, sid], queue=self.queue)

    def wait_terminal(self, tenant: str, sid: str, tid: str, timeout: float = 60) -> object:
        from tests.procs import wait_for

        def done() -> object:
            t = self.store.get_turn(tenant, sid, tid)  # type: ignore[attr-defined]
            return t if t.state.terminal else None

        return wait_for(done, timeout, interval=0.1, what=f"turn {tid} terminal")


@pytest.fixture
def client(store: object, service_env: dict[str, str]) -> Client:
    return Client(store, service_env["TURNKEEP_REDIS_URL"])
