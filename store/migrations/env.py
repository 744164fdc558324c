"""Alembic environment: the URL comes from turnkeep's settings (TURNKEEP_MIGRATE_URL, the
tables' owner), never from alembic.ini."""

from __future__ import annotations

from alembic import context
from sqlalchemy import create_engine, pool

import turnkeep.store.schema  # noqa: F401  (gathers every table on the one metadata)
from turnkeep.runtime.settings import Settings
from turnkeep.store.db import sqlalchemy_url
from turnkeep.store.schema_base import metadata

config = context.config


def _url() -> str:
    return sqlalchemy_url(config.attributes.get("url") or Settings().database.effective_migrate_url)


def run_migrations_offline() -> None:
    context.configure(url=_url(), target_metadata=metadata, literal_binds=True)
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        context.configure(connection=connection, target_metadata=metadata)
        with context.begin_transaction():
            context.run_migrations()
        return
    engine = create_engine(_url(), poolclass=pool.NullPool)
    with engine.connect() as conn:
        context.configure(connection=conn, target_metadata=metadata)
        with context.begin_transaction():
            context.run_migrations()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
