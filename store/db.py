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
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, suppress
from typing import Any

import psycopg
from psycopg.rows import dict_row

from store.errors import Unavailable

Row = dict[str, Any]


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


class Database:
    """At most ``size`` connections of this process, each used by one thread at a time."""

    def __init__(self, url: str, *, size: int = 10, connect_timeout: float = 5) -> None:
        self.conninfo = conninfo(url)
        self.size = size
        self.connect_timeout = connect_timeout
        self._idle: list[psycopg.Connection[Row]] = []
        self._slots = threading.BoundedSemaphore(size)
        self._lock = threading.Lock()
        self._pid = os.getpid()
        #: connections inherited across a fork: kept referenced, never closed, since
        #: closing one would end the parent's session on the server
        self._inherited: list[psycopg.Connection[Row]] = []

    def _dial(self) -> psycopg.Connection[Row]:
        return psycopg.connect(
            self.conninfo,
            autocommit=True,
            row_factory=dict_row,
            connect_timeout=max(1, int(self.connect_timeout)),
        )

    def _forked(self) -> None:
        with self._lock:
            if self._pid == os.getpid():
                return
            self._inherited += self._idle
            self._idle = []
            self._slots = threading.BoundedSemaphore(self.size)
            self._pid = os.getpid()

    @contextmanager
    def connection(self) -> Iterator[psycopg.Connection[Row]]:
        """A connection for the block, in autocommit; ``Unavailable`` when Postgres
        cannot be reached or the connection broke under the block."""
        if self._pid != os.getpid():
            self._forked()
        slots = self._slots
        if not slots.acquire(timeout=30):
            raise Unavailable("no postgres connection free in time")
        conn: psycopg.Connection[Row] | None = None
        try:
            with self._lock:
                conn = self._idle.pop() if self._idle else None
            if conn is None:
                conn = self._dial()
            yield conn
        except psycopg.OperationalError as exc:
            self._drop(conn)
            conn = None
            raise Unavailable("postgres is unavailable") from exc
        except BaseException:
            if conn is not None and (conn.broken or conn.closed):
                self._drop(conn)
                conn = None
            raise
        finally:
            if conn is not None:
                self._give_back(conn)
            slots.release()

    def _give_back(self, conn: psycopg.Connection[Row]) -> None:
        if conn.broken or conn.closed:
            return
        if conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
            try:
                conn.rollback()
            except psycopg.Error:
                conn.close()
                return
        with self._lock:
            self._idle.append(conn)

    def _drop(self, conn: psycopg.Connection[Row] | None) -> None:
        """A connection failed: close it and every idle one, which a server restart
        has most likely killed too."""
        with self._lock:
            stale, self._idle = self._idle, []
        for c in [*stale, *([conn] if conn is not None else [])]:
            with suppress(psycopg.Error):
                c.close()

    def rows(self, sql: str, params: Mapping[str, Any]) -> list[Row]:
        """Run one statement in autocommit (its own transaction) and return its rows.
        Every named statement returns rows (a SELECT or a RETURNING)."""
        with self.connection() as conn:
            return conn.execute(sql, params).fetchall()

    @contextmanager
    def transaction(self) -> Iterator[psycopg.Connection[Row]]:
        """One transaction over several statements, committed when the block ends
        without an exception."""
        with self.connection() as conn, conn.transaction():
            yield conn

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        if self._pid != os.getpid():
            return
        for c in idle:
            c.close()
