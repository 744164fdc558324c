"""Shared fixtures: one fresh Postgres database per test run, migrated with Alembic,
and one Redis database, flushed at the start. Tests isolate from each other by
unique tenant and session ids, not by resetting services between tests.

Unit tests (tests/unit) touch none of this. No test reaches a model provider: the
provider env vars point at a closed local port unless a test sets its own server.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import psycopg
import pytest
import redis

PG_ADMIN = os.environ.get("TURNKEEP_TEST_PG", "postgresql://postgres@127.0.0.1:5432/postgres")
REDIS_BASE = os.environ.get("TURNKEEP_TEST_REDIS", "redis://127.0.0.1:6379")
REDIS_DB = int(os.environ.get("TURNKEEP_TEST_REDIS_DB", "9"))

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


@pytest.fixture(scope="session")
def redis_url() -> str:
    url = f"{REDIS_BASE}/{REDIS_DB}"
    redis.Redis.from_url(url).flushdb()
    return url


@pytest.fixture(scope="session")
def service_env(database_url: str, redis_url: str) -> dict[str, str]:
    """The environment a turnkeep process of this test run gets."""
    env = {
        "TURNKEEP_DATABASE_URL": database_url,
        "TURNKEEP_REDIS_URL": redis_url,
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
