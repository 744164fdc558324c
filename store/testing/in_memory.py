"""``InMemoryConnector``: the named statements answered in Python over dicts.

It plugs in below the facade (store/connector.py): ``Store(InMemoryConnector())`` is
the real ``Store``, its own code running (rows into records, refusals into named
reasons, the start's retries), over tables kept in memory instead of Postgres.

One lock serialises every statement and holds for a whole transaction: the
statements never interleave, as if every one locked the whole database (Postgres
locks a session's row; what it lets run side by side, this runs one at a time). A
transaction that raises is rolled back to the tables as they were when it began.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import fields
from datetime import UTC, datetime
from typing import Any

from turnkeep.store.db import Row
from turnkeep.store.sql import names
from turnkeep.store.testing import reads, turns
from turnkeep.store.testing.tables import Statement, Tables

#: every statement answered in memory, by name
STATEMENTS: dict[str, Statement] = {**turns.STATEMENTS, **reads.STATEMENTS}


class _Transaction:
    __slots__ = ("connector",)

    def __init__(self, connector: InMemoryConnector) -> None:
        self.connector = connector

    def rows(self, name: str, params: Mapping[str, Any]) -> list[Row]:
        return self.connector._run(name, params)


class InMemoryConnector:
    """The store's tables in memory (``tables``), for tests: no Postgres needed.

    A statement it does not answer raises ``NotImplementedError`` naming it; row-level
    security is not mirrored (each statement filters by its own ``:tenant_id``, as
    every one of the store's does)."""

    def __init__(self) -> None:
        self.tables = Tables()
        self._lock = threading.RLock()
        #: transactions open (on the thread holding the lock)
        self._depth = 0

    def rows(self, name: str, params: Mapping[str, Any], *, tenant: str) -> list[Row]:
        with self._lock:
            return self._run(name, params)

    @contextmanager
    def transaction(self, tenant: str) -> Iterator[_Transaction]:
        with self._lock:
            saved = copy.deepcopy(self.tables)
            self._depth += 1
            if self._depth == 1:
                self.tables.clock = datetime.now(UTC)
            try:
                yield _Transaction(self)
            except BaseException:
                # rolled back in place: whoever holds ``tables`` sees the rollback
                for f in fields(Tables):
                    setattr(self.tables, f.name, getattr(saved, f.name))
                raise
            finally:
                self._depth -= 1

    @contextmanager
    def session(self, tenant: str) -> Iterator[_Session]:
        yield _Session(self, tenant)

    def _run(self, name: str, params: Mapping[str, Any]) -> list[Row]:
        statement = STATEMENTS.get(name)
        if statement is None:
            where = "a statement of store/sql/" if name in names() else "no statement of"
            raise NotImplementedError(
                f"the in-memory store does not answer {name!r} ({where} store/sql/*.sql); "
                "answer it in store/testing/ or test this against Postgres"
            )
        if self._depth == 0:  # autocommit: the statement is its own transaction
            self.tables.clock = datetime.now(UTC)
        # rows are handed out as copies: a caller cannot change what is stored
        return copy.deepcopy(statement(self.tables, params))

    def ping(self) -> None:
        """Always answers."""

    def close(self) -> None:
        """Nothing to close."""


class _Session:
    """``Connector.session``: each statement on its own, as ``rows`` runs it."""

    def __init__(self, connector: InMemoryConnector, tenant: str) -> None:
        self.connector = connector
        self.tenant = tenant

    def rows(self, name: str, params: Mapping[str, Any]) -> list[Row]:
        return self.connector.rows(name, params, tenant=self.tenant)
