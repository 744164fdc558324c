"""The Postgres connections of one process, and the one place driver errors become
store errors.

A small LIFO pool of psycopg connections in autocommit, built for the step path:

* No background threads and no connection checks: a pre-ping costs a round trip per
  statement, a third of a step's commit. A connection that failed is dropped, and
  with it every idle one (after a server restart they are all dead), so the next
  statement dials afresh.
* Fails fast: a checkout that must dial while the server is down raises
  ``Unavailable`` at once (the connect timeout bounds it), never waits for a
  background reconnect, so the API answers 503 instead of hanging.
* Fork-aware: a prefork child that inherited its parent's pool must not use (or
  close) the parent's sockets; it starts an empty pool of its own.
* Statements are prepared server-side after a few uses on a connection (psycopg's
  ``prepare_threshold``), so the named statements of the step path are parsed once
  per connection, not per step.
* Tenant-scoped: every statement runs with the session setting ``turnkeep.tenant``
  (``TENANT_SETTING``) that the row-level security policies of every tenant-keyed
  table read (store/schema.py), so a statement that forgot its ``tenant_id`` clause
  still sees one tenant's rows only. The pool remembers what each connection is set
  to; only when a statement's tenant differs is ``set_config`` sent, pipelined with
  the statement: the same round trip and the same server transaction (a failed
  statement rolls the setting back with it, and the pool forgets it). ``*``
  (``ALL_TENANTS``) is the cross-tenant system scans' (store/statements.py).
* json and jsonb results are decoded by the hot path's codec (runtime/jsonwire.py),
  straight from the driver's buffer: the same values ``json.loads`` gives.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from typing import Any

import psycopg
from psycopg.adapt import Buffer, Loader
from psycopg.conninfo import conninfo_to_dict
from psycopg.rows import dict_row

from turnkeep.runtime import jsonwire
from turnkeep.store.errors import Unavailable

Row = dict[str, Any]

#: the session setting the row-level security policies read (store/schema.py)
TENANT_SETTING = "turnkeep.tenant"
#: its value for the cross-tenant system scans only; never a tenant id (api/auth.py
#: allows none with ``*``, and ``Store`` refuses one)
ALL_TENANTS = "*"
_SET_TENANT = f"SELECT set_config('{TENANT_SETTING}', %s, false)"
#: every connection's settings, added to the URL's own ``options``. JIT off: the
#: statements are short, and row security's estimate (one tenant in as many as a table
#: holds, on top of the statement's own tenant clause) can make a LIMITed walk look as
#: dear as reading a whole table, past ``jit_above_cost``: a search of 100,000 turns
#: that ran in 1.7 ms spent 25 ms compiling itself (docs/search.md)
OPTIONS = "-c jit=off"


class _JsonLoader(Loader):
    """A json or jsonb column in text format (psycopg's copies the buffer to bytes
    first, for ``json.loads``)."""

    def load(self, data: Buffer) -> Any:
        return jsonwire.loads(data)


def conninfo(url: str) -> str:
    """A libpq URL from a SQLAlchemy one (``postgresql+psycopg://``): one setting
    serves Alembic and the store."""
    scheme, sep, rest = url.partition("://")
    return f"postgresql://{rest}" if sep and scheme.startswith("postgresql") else url


def sqlalchemy_url(url: str) -> str:
    """The SQLAlchemy URL (psycopg 3 driver) for a libpq one, for Alembic: either
    spelling of ``TURNKEEP_DATABASE_URL`` serves both."""
    scheme, sep, rest = url.partition("://")
    return f"postgresql+psycopg://{rest}" if sep and scheme in ("postgresql", "postgres") else url


class _Pooled:
    """A connection and the tenant its session is set to (None: not known, set it
    before the next statement)."""

    __slots__ = ("conn", "tenant")

    def __init__(self, conn: psycopg.Connection[Row]) -> None:
        self.conn = conn
        self.tenant: str | None = None


class Database:
    """At most ``size`` connections of this process, each used by one thread at a time."""

    def __init__(self, url: str, *, size: int = 10, connect_timeout: float = 5) -> None:
        self.conninfo = conninfo(url)
        given = conninfo_to_dict(self.conninfo).get("options") or ""
        self.options = f"{given} {OPTIONS}".strip()
        self.size = size
        self.connect_timeout = connect_timeout
        self._idle: list[_Pooled] = []
        self._slots = threading.BoundedSemaphore(size)
        self._lock = threading.Lock()
        self._pid = os.getpid()
        #: connections inherited across a fork: kept referenced, never closed, since
        #: closing one would end the parent's session on the server
        self._inherited: list[_Pooled] = []

    def _dial(self) -> psycopg.Connection[Row]:
        conn = psycopg.connect(
            self.conninfo,
            autocommit=True,
            row_factory=dict_row,
            connect_timeout=max(1, int(self.connect_timeout)),
            options=self.options,
        )
        for name in ("json", "jsonb"):
            conn.adapters.register_loader(name, _JsonLoader)
        return conn

    def _forked(self) -> None:
        with self._lock:
            if self._pid == os.getpid():
                return
            self._inherited += self._idle
            self._idle = []
            self._slots = threading.BoundedSemaphore(self.size)
            self._pid = os.getpid()

    @contextmanager
    def _checkout(self) -> Iterator[_Pooled]:
        """A pooled connection for the block; ``Unavailable`` when Postgres cannot be
        reached or the connection broke under the block."""
        if self._pid != os.getpid():
            self._forked()
        slots = self._slots
        if not slots.acquire(timeout=30):
            raise Unavailable("no postgres connection free in time")
        pooled: _Pooled | None = None
        try:
            with self._lock:
                pooled = self._idle.pop() if self._idle else None
            if pooled is None:
                pooled = _Pooled(self._dial())
            yield pooled
        except psycopg.OperationalError as exc:
            self._drop(pooled)
            pooled = None
            raise Unavailable("postgres is unavailable") from exc
        except BaseException:
            if pooled is not None and (pooled.conn.broken or pooled.conn.closed):
                self._drop(pooled)
                pooled = None
            raise
        finally:
            if pooled is not None:
                self._give_back(pooled)
            slots.release()

    @contextmanager
    def connection(self, tenant: str = "") -> Iterator[psycopg.Connection[Row]]:
        """A connection for the block, in autocommit, its session set to ``tenant``
        (``""``: none, so no tenant's rows are visible): one round trip more when the
        pooled connection was set to another."""
        with self._checkout() as pooled:
            self._set_tenant(pooled, tenant)
            try:
                yield pooled.conn
            finally:
                pooled.tenant = None  # the block may have set anything

    @staticmethod
    def _set_tenant(pooled: _Pooled, tenant: str) -> None:
        """Set the session's tenant on its own (a round trip) unless it is set already."""
        if pooled.tenant != tenant:
            pooled.tenant = None
            pooled.conn.execute(_SET_TENANT, (tenant,))
            pooled.tenant = tenant

    def _give_back(self, pooled: _Pooled) -> None:
        conn = pooled.conn
        if conn.broken or conn.closed:
            return
        if conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
            pooled.tenant = None  # a setting made in the transaction is rolled back
            try:
                conn.rollback()
            except psycopg.Error:
                conn.close()
                return
        with self._lock:
            self._idle.append(pooled)

    def _drop(self, pooled: _Pooled | None) -> None:
        """A connection failed: close it and every idle one, which a server restart
        has most likely killed too."""
        with self._lock:
            stale, self._idle = self._idle, []
        for p in [*stale, *([pooled] if pooled is not None else [])]:
            with suppress(psycopg.Error):
                p.conn.close()

    def rows(
        self,
        sql: str,
        params: Mapping[str, Any],
        *,
        tenant: str = "",
        prepare: bool | None = None,
    ) -> list[Row]:
        """Run one statement in autocommit (its own transaction) as ``tenant`` sees the
        tables (``""``: no tenant, no rows) and return its rows. Every named statement
        returns rows (a SELECT or a RETURNING).

        A connection already set to ``tenant`` runs the statement alone; another gets
        ``set_config`` and the statement in one pipeline: one round trip, one server
        transaction (no Sync between them), so the setting and the statement commit or
        roll back together. ``prepare``: psycopg's (False: never prepared, planned for
        these parameters; store/sql.py ``UNPREPARED``)."""
        return self._run(psycopg.Cursor, sql, params, tenant, prepare)

    def raw_rows(
        self,
        sql: bytes,
        args: Sequence[Any],
        *,
        tenant: str = "",
        prepare: bool | None = None,
    ) -> list[Row]:
        """``rows`` for a statement with Postgres' ``$n`` parameters (store/sql.py
        ``Statement``), sent as it is."""
        return self._run(psycopg.RawCursor, sql, args, tenant, prepare)

    def _run(
        self,
        cursor: type[psycopg.Cursor[Any]] | type[psycopg.RawCursor[Any]],
        sql: str | bytes,
        params: Any,
        tenant: str,
        prepare: bool | None,
    ) -> list[Row]:
        with self._checkout() as pooled:
            conn = pooled.conn
            if pooled.tenant == tenant:
                return cursor(conn).execute(sql, params, prepare=prepare).fetchall()
            pooled.tenant = None
            with conn.pipeline():
                conn.execute(_SET_TENANT, (tenant,))
                cur = cursor(conn).execute(sql, params, prepare=prepare)
            rows = cur.fetchall()
            pooled.tenant = tenant
            return rows

    @contextmanager
    def transaction(self, tenant: str = "") -> Iterator[psycopg.Connection[Row]]:
        """One transaction over several statements, as ``tenant`` sees the tables,
        committed when the block ends without an exception (the setting, when the
        connection needs it, is one statement of its own before the transaction)."""
        with self._checkout() as pooled:
            self._set_tenant(pooled, tenant)
            with pooled.conn.transaction():
                yield pooled.conn

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        if self._pid != os.getpid():
            return
        for p in idle:
            p.conn.close()
