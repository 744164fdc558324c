"""The Postgres engine and the one place driver errors become store errors."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import Connection, Engine, create_engine
from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError

from store.errors import Unavailable


def make_engine(url: str, *, pool_size: int = 10) -> Engine:
    # No pre-ping: it costs a round trip on every transaction, a third of a step's
    # commit. After a Postgres restart the first statement on a dead pooled connection
    # fails (Unavailable); SQLAlchemy then discards the whole pool, checkpoints retry,
    # and the API answers one 503 that an idempotent retry turns into the same answer.
    return create_engine(
        url,
        pool_size=pool_size,
        max_overflow=pool_size,
        pool_pre_ping=False,
        pool_recycle=1800,
        pool_timeout=30,
        connect_args={"connect_timeout": 5},
    )


@contextmanager
def _translated() -> Iterator[None]:
    """A lost connection or a down server becomes ``Unavailable``."""
    try:
        yield
    except (OperationalError, InterfaceError) as exc:
        raise Unavailable("postgres is unavailable") from exc
    except DBAPIError as exc:
        if exc.connection_invalidated:
            raise Unavailable("postgres connection was lost") from exc
        raise


@contextmanager
def transaction(engine: Engine) -> Iterator[Connection]:
    """One transaction, committed when the block ends without an exception."""
    # connect() rather than begin(): a transition may roll back half-way (a lost
    # idempotency race) and go on reading in a fresh transaction on the same connection
    with _translated(), engine.connect() as conn:
        try:
            yield conn
            conn.commit()
        except BaseException:
            conn.rollback()
            raise


@contextmanager
def statement(engine: Engine) -> Iterator[Connection]:
    """A connection for exactly one statement, in autocommit: no BEGIN and no COMMIT
    round trips. Only for reads and for writes that are one atomic statement."""
    with _translated(), engine.connect() as conn:
        yield conn.execution_options(isolation_level="AUTOCOMMIT")
