"""Counting hooks for the commits-per-step benchmark. Bench code only.

A real ``celery -A worker.app worker`` loads it with ``-I bench.probe``; it changes no
behaviour, it only counts, from inside the process:

* every SQL statement SQLAlchemy sends, by its ``queries.sql`` block name
  (``fenced_append`` split by the event type it writes), every COMMIT and ROLLBACK,
  every pool checkout (each one a ``SELECT 1`` pre-ping round trip unless the
  connection is brand new) and every new connection;
* the wall time of each ``Store.append`` (one checkpoint, as the executor sees it);
* Redis round trips of the runtime: live deltas, committed-event publishes, lease
  grant / renew / release.

Every 0.2 s it writes a JSON snapshot to Redis (``bench:probe:<role>:<pid>``) on the
``TURNKEEP_REDIS_URL`` database, where bench/workers.py reads it.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from collections import Counter
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import Engine
from sqlalchemy.pool import Pool

_lock = threading.Lock()
counts: Counter[str] = Counter()
append_seconds: list[float] = []
_names: dict[str, str] = {}
_installed = False
MAX_SAMPLES = 200_000


def _bump(key: str, n: int = 1) -> None:
    with _lock:
        counts[key] += n


def _statement_name(conn: Any, statement: str, parameters: Any) -> str:
    if not _names:
        from store.sql import names, q

        with _lock:
            for n in names():
                _names[str(q(n).compile(dialect=conn.dialect))] = n
    name = _names.get(statement)
    if name is None:
        return "other: " + " ".join(statement.split())[:60]
    if name == "fenced_append" and isinstance(parameters, dict):
        return f"fenced_append[{parameters.get('type')}]"
    return name


def _autocommit(conn: Any) -> bool:
    try:
        return bool(conn._is_autocommit_isolation())
    except Exception:
        return False


def _install_sql() -> None:
    @event.listens_for(Engine, "before_cursor_execute")
    def _stmt(
        conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, executemany: bool
    ) -> None:
        _bump("sql:" + _statement_name(conn, statement, parameters))
        if _autocommit(conn):
            # an autocommit statement is a server transaction of its own, and SQLAlchemy
            # fires no commit event for it
            _bump("tx:autocommit_statement")

    # psycopg sends BEGIN as a round trip of its own before the first statement of a
    # transaction, and COMMIT as another; in AUTOCOMMIT isolation neither is sent
    @event.listens_for(Engine, "begin")
    def _begin(conn: Any) -> None:
        _bump("tx:begin" + ("_autocommit" if _autocommit(conn) else ""))

    @event.listens_for(Engine, "commit")
    def _commit(conn: Any) -> None:
        _bump("tx:commit" + ("_autocommit" if _autocommit(conn) else ""))

    @event.listens_for(Engine, "rollback")
    def _rollback(conn: Any) -> None:
        _bump("tx:rollback")

    @event.listens_for(Pool, "checkout")
    def _checkout(dbapi_conn: Any, record: Any, proxy: Any) -> None:
        _bump("pool:checkout")

    @event.listens_for(Pool, "connect")
    def _connect(dbapi_conn: Any, record: Any) -> None:
        _bump("pool:connect")


def _wrap(owner: Any, attr: str, key: str, timed: bool = False) -> None:
    original = getattr(owner, attr)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            if timed:
                dt = time.perf_counter() - t0
                with _lock:
                    if len(append_seconds) < MAX_SAMPLES:
                        append_seconds.append(dt)
            _bump(key)

    wrapper.__wrapped__ = original  # type: ignore[attr-defined]
    setattr(owner, attr, wrapper)


def _install_runtime() -> None:
    from sqlalchemy.engine.default import DefaultDialect

    from store.channel import Publisher
    from store.lease import LeaseManager
    from store.transitions import Store

    # the pool's pre-ping (if the engine has it on): SELECT 1, in autocommit for psycopg
    _wrap(DefaultDialect, "_do_ping_w_event", "pool:pre_ping")
    _wrap(Store, "append", "call:Store.append", timed=True)
    _wrap(Publisher, "delta", "redis:publish_delta")
    _wrap(Publisher, "committed", "redis:publish_committed")
    _wrap(LeaseManager, "grant", "redis:lease_grant")
    _wrap(LeaseManager, "renew", "redis:lease_renew")
    _wrap(LeaseManager, "release", "redis:lease_release")
    try:
        from worker import executor

        _wrap(executor, "run_session", "call:run_session")
    except ImportError:  # the bench process itself has no worker context
        pass


def snapshot() -> dict[str, Any]:
    with _lock:
        return {
            "ts": time.time(),
            "pid": os.getpid(),
            "counts": dict(counts),
            "append_seconds": list(append_seconds),
        }


def _flusher(role: str) -> None:
    import redis

    client = redis.Redis.from_url(os.environ["TURNKEEP_REDIS_URL"])
    key = f"bench:probe:{role}:{os.getpid()}"
    while True:
        time.sleep(0.2)
        with contextlib.suppress(redis.RedisError):
            client.set(key, json.dumps(snapshot()))


def install(role: str, *, flush: bool) -> None:
    """Install the hooks once in this process; ``flush`` starts the Redis writer."""
    global _installed
    if _installed:
        return
    _installed = True
    _install_sql()
    _install_runtime()
    if flush:
        threading.Thread(target=_flusher, args=(role,), name="bench-probe", daemon=True).start()


if os.environ.get("BENCH_PROBE_ROLE"):
    install(os.environ["BENCH_PROBE_ROLE"], flush=True)
