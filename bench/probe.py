"""Counting hooks for the statement breakdown (``--breakdown``). Bench code only.

A real ``celery -A turnkeep.worker.app worker`` loads it with ``-I bench.probe``. It changes no
behaviour, it only counts, from inside the process and at the driver level, so it
does not depend on how the store builds or sends its statements:

* every statement psycopg sends (``Cursor.execute`` / ``executemany``), by its
  ``store/sql/*.sql`` block name when the text is one of them (``fenced_append`` split
  by the event type it writes), else by its first words; and whether it ran in
  autocommit (a server transaction of its own);
* the transaction commands psycopg sends itself (BEGIN, COMMIT, ROLLBACK, ...) and
  every new connection (a backend start-up, one server transaction too);
* redis-py commands by name (the product's and Celery's alike) and pipelines.

Every 0.2 s it writes a JSON snapshot to Redis (``bench:probe:<pid>``) on the
``TURNKEEP_REDIS_URL`` database, where bench/scenarios/commits.py reads it. Never
load it into a worker whose CPU or statements are being measured.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from collections import Counter
from typing import Any

_lock = threading.Lock()
_local = threading.local()
counts: Counter[str] = Counter()
_names: dict[str, str] = {}
#: where each statement's ``type`` parameter sits in its $n arguments (-1: none)
_type_at: dict[str, int] = {}
_installed = False


def _bump(key: str) -> None:
    if getattr(_local, "quiet", False):
        return
    with _lock:
        counts[key] += 1


def _norm(sql: Any) -> str:
    if isinstance(sql, bytes):
        sql = sql.decode(errors="replace")
    return " ".join(str(sql).split())


def _load_names() -> None:
    """store/sql/*.sql's blocks as the driver sees them, whatever renders them."""
    try:
        from turnkeep.store.sql import names, q, statement
    except ImportError:
        return
    for n in names():
        # the store sends the $n form (store/sql.py Statement); tests and older code the
        # %(name)s one
        _names[_norm(statement(n).text)] = n
        _type_at[n] = statement(n).params.index("type") if "type" in statement(n).params else -1
        try:
            v: Any = q(n)
            if not isinstance(v, str):  # a SQLAlchemy text(): compile it for psycopg
                from sqlalchemy.dialects.postgresql import psycopg as pg_dialect

                v = str(v.compile(dialect=pg_dialect.dialect()))
            _names[_norm(v)] = n
        except Exception:
            continue


def statement_name(sql: Any, params: Any) -> str:
    if not _names:
        with _lock:
            if not _names:
                _load_names()
    text = _norm(sql)
    name = _names.get(text)
    if name is None:
        return "other: " + text[:60]
    if name == "fenced_append" and isinstance(params, dict) and "type" in params:
        return f"fenced_append[{params['type']}]"
    at = _type_at.get(name, -1)
    if name == "fenced_append" and isinstance(params, (tuple, list)) and 0 <= at < len(params):
        return f"fenced_append[{params[at]}]"
    return name


def _install_psycopg() -> None:
    import psycopg

    idle = psycopg.pq.TransactionStatus.IDLE

    def wrap_execute(original: Any) -> Any:
        def execute(self: Any, query: Any, params: Any = None, *args: Any, **kw: Any) -> Any:
            conn = self.connection
            _bump("sql:" + statement_name(query, params))
            if conn.autocommit and conn.info.transaction_status == idle:
                _bump("tx:autocommit_statement")  # a server transaction of its own
            return original(self, query, params, *args, **kw)

        return execute

    psycopg.Cursor.execute = wrap_execute(psycopg.Cursor.execute)  # type: ignore[method-assign]
    psycopg.Cursor.executemany = wrap_execute(psycopg.Cursor.executemany)  # type: ignore[method-assign]

    original_cmd = psycopg.Connection._exec_command

    def exec_command(self: Any, command: Any, *args: Any, **kw: Any) -> Any:
        words = _norm(command.as_string(self) if hasattr(command, "as_string") else command)
        _bump("tx:" + (words.split(" ", 1)[0].upper() if words else "?"))
        return original_cmd(self, command, *args, **kw)

    psycopg.Connection._exec_command = exec_command  # type: ignore[method-assign]

    original_connect = psycopg.Connection.connect.__func__  # type: ignore[attr-defined]

    def connect(cls: Any, *args: Any, **kw: Any) -> Any:
        _bump("pg:connect")
        return original_connect(cls, *args, **kw)

    psycopg.Connection.connect = classmethod(connect)  # type: ignore[method-assign, assignment]
    psycopg.connect = psycopg.Connection.connect  # the module's alias of it

    # a statement psycopg prepares server-side (after prepare_threshold uses on one
    # connection) costs a Parse round trip of its own: one more server transaction
    from psycopg._preparing import Prepare, PrepareManager

    original_get = PrepareManager.get

    def get(self: Any, *args: Any, **kw: Any) -> Any:
        out = original_get(self, *args, **kw)
        if out[0] is Prepare.SHOULD:
            _bump("pg:prepare")
        return out

    PrepareManager.get = get  # type: ignore[method-assign]


def _install_redis() -> None:
    import redis.client

    original = redis.client.Redis.execute_command

    def execute_command(self: Any, *args: Any, **kw: Any) -> Any:
        _bump(f"redis:{str(args[0]).upper() if args else '?'}")
        return original(self, *args, **kw)

    redis.client.Redis.execute_command = execute_command  # type: ignore[method-assign]
    original_pipe = redis.client.Pipeline.execute

    def pipe_execute(self: Any, *args: Any, **kw: Any) -> Any:
        _bump("redis:pipeline")
        return original_pipe(self, *args, **kw)

    redis.client.Pipeline.execute = pipe_execute  # type: ignore[method-assign]


def snapshot() -> dict[str, Any]:
    with _lock:
        return {"ts": time.time(), "pid": os.getpid(), "counts": dict(counts)}


def _flusher() -> None:
    import redis

    _local.quiet = True  # the flusher's own Redis calls are not counted
    client = redis.Redis.from_url(os.environ["TURNKEEP_REDIS_URL"])
    key = f"bench:probe:{os.getpid()}"
    while True:
        time.sleep(0.2)
        with contextlib.suppress(redis.RedisError):
            client.set(key, json.dumps(snapshot()))


def install() -> None:
    """Install the hooks once in this process and start the Redis writer."""
    global _installed
    if _installed:
        return
    _installed = True
    _install_psycopg()
    _install_redis()
    threading.Thread(target=_flusher, name="bench-probe", daemon=True).start()


if os.environ.get("BENCH_PROBE"):
    install()
