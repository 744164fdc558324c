"""What a named statement runs on: a ``Connector``.

Every concern of the store (store/turns.py, reads.py, …) runs its statements by name
through ``Statements`` (store/statements.py), which hands the name and parameters to
its connector. ``PostgresConnector`` runs the statement's SQL (store/sql.py) on the
process's pool; ``turnkeep.store.testing.InMemoryConnector`` answers the same names in Python
over dicts, so the facade's own code (rows into records, refusals into named
reasons, retries) runs the same over either, the way procrastinate's manager runs
over its ``InMemoryConnector``.

A connector speaks the database's language back: a statement's rows as dicts of its
columns, and its refusals as the driver's errors (``psycopg.errors.DivisionByZero``
for a statement's own guard, ``UniqueViolation`` for a unique index), which the
store translates in one place (store/errors.py ``refusal``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from typing import Any, Protocol

import psycopg

from turnkeep.store.db import Database, Row
from turnkeep.store.sql import prepare, statement


class Transaction(Protocol):
    """Statements run one after another in one transaction (``Connector.transaction``)."""

    def rows(self, name: str, params: Mapping[str, Any]) -> list[Row]: ...


class Connector(Protocol):
    """Runs a named statement of store/sql/*.sql as ``tenant`` sees the tables."""

    def rows(self, name: str, params: Mapping[str, Any], *, tenant: str) -> list[Row]:
        """One statement in autocommit (its own transaction): its rows."""
        ...

    def transaction(self, tenant: str) -> AbstractContextManager[Transaction]:
        """Several statements in one transaction, committed when the block ends
        without an exception and rolled back when it raises."""
        ...

    def session(self, tenant: str) -> AbstractContextManager[Transaction]:
        """Several statements on one connection, each in autocommit (its own
        transaction), for a session-level lock held across them."""
        ...

    def ping(self) -> None: ...

    def close(self) -> None: ...


class _SqlTransaction:
    __slots__ = ("conn",)

    def __init__(self, conn: psycopg.Connection[Row]) -> None:
        self.conn = conn

    def rows(self, name: str, params: Mapping[str, Any]) -> list[Row]:
        st = statement(name)
        cur = psycopg.RawCursor(self.conn)
        return cur.execute(st.text, st.args(params), prepare=prepare(name)).fetchall()


class PostgresConnector:
    """The named statements' SQL on a process's pool (store/db.py ``Database``)."""

    __slots__ = ("db",)

    def __init__(self, db: Database) -> None:
        self.db = db

    def rows(self, name: str, params: Mapping[str, Any], *, tenant: str) -> list[Row]:
        st = statement(name)
        return self.db.raw_rows(st.text, st.args(params), tenant=tenant, prepare=prepare(name))

    @contextmanager
    def transaction(self, tenant: str) -> Iterator[Transaction]:
        with self.db.transaction(tenant) as conn:
            yield _SqlTransaction(conn)

    @contextmanager
    def session(self, tenant: str) -> Iterator[Transaction]:
        with self.db.connection(tenant) as conn:
            yield _SqlTransaction(conn)

    def ping(self) -> None:
        """One round trip; ``Unavailable`` when Postgres does not answer."""
        self.db.rows("SELECT 1", {})

    def close(self) -> None:
        self.db.close()
