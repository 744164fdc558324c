"""What a tenant holds in Postgres, row by row: for the tests that a refused request
wrote nothing (compare a snapshot from before it with one from after)."""

from __future__ import annotations

import psycopg


def tenant_rows(database_url: str, tenant: str) -> dict[str, list[str]]:
    """Every row of ``tenant`` in every table that has a ``tenant_id`` column (found in
    the catalogue, so a table added later is covered), each as its text form, sorted.
    Read as the owner (``database_url``), whom row-level security does not bind."""
    url = database_url.replace("postgresql+psycopg://", "postgresql://")
    with psycopg.connect(url) as conn:
        tables = [
            name
            for (name,) in conn.execute(
                "SELECT table_name FROM information_schema.columns"
                " WHERE table_schema = 'public' AND column_name = 'tenant_id'"
                " ORDER BY table_name"
            )
        ]
        assert {"projects", "sessions", "turns", "events"} <= set(tables), tables
        return {
            table: [
                row
                for (row,) in conn.execute(
                    f"SELECT r::text FROM {table} r WHERE tenant_id = %s ORDER BY 1", (tenant,)
                )
            ]
            for table in tables
        }
