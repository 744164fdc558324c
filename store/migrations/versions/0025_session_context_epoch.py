"""sessions.context_epoch: what a worker's cached context window was read under

Revision ID: 0025
Revises: 0024
Create Date: 2026-12-08

A worker keeps the context window of a session's last start (store/context_cache.py)
and the next start reads only the rows after it, while the session's context epoch is
the one the window was read under (docs/context.md). Every session takes a value of
the sequence no other session had; pruning its events and its tombstone take a new one.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0025"
down_revision = "0024"
branch_labels = None
depends_on = None

ROLE = "turnkeep_app"


def upgrade() -> None:
    op.execute("CREATE SEQUENCE session_context_epochs")
    op.execute(f"GRANT USAGE, SELECT ON SEQUENCE session_context_epochs TO {ROLE}")
    # a volatile default: every existing row takes its own value (one rewrite of sessions)
    op.add_column(
        "sessions",
        sa.Column(
            "context_epoch",
            sa.BigInteger(),
            nullable=False,
            server_default=sa.text("nextval('session_context_epochs'::regclass)"),
        ),
    )


def downgrade() -> None:
    op.drop_column("sessions", "context_epoch")
    op.execute("DROP SEQUENCE session_context_epochs")
