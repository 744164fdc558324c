"""Flow control's table (store/schema.py gathers it): a tenant's declared limits.

One row per tenant that declared one through the API (``PUT /v1/limits``); a tenant
with no row takes ``TURNKEEP_MAX_RUNNING_PER_TENANT``. The start statement reads it
(store/sql/turns.sql ``start_turn``); docs/flow-control.md says what a limit does.
"""

from __future__ import annotations

from sqlalchemy import CheckConstraint, Column, DateTime, Integer, Table, Text, func

from turnkeep.store.schema_base import metadata

# a tenant's max_running (migration 0020): at most this many of its turns running at
# once; NULL: no limit of its own (the setting's, if any)
tenant_limits = Table(
    "tenant_limits",
    metadata,
    Column("tenant_id", Text, primary_key=True),
    Column("max_running", Integer, nullable=True),
    Column("updated_by", Text, nullable=False),
    Column("updated_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    CheckConstraint("max_running > 0", name="max_running"),
)
