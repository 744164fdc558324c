"""evaluation: datasets, experiments, their results, and agents' promotions

Revision ID: 0019
Revises: 0018
Create Date: 2026-12-04

Five new tables (store/schema_eval.py, docs/evaluation.md), each under the tenant
policy as 0006 put every tenant table: ``eval_datasets`` (immutable versions of a
named dataset) and ``eval_cases`` (their cases), ``eval_experiments`` (a dataset
version run against an agent version) and ``eval_results`` (each case's turn, score
and judge), and ``agent_promotions``, the append-only journal of promotions: the
application's role may insert and read it, never update or delete. Nothing existing is
rewritten or locked.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None

# Written out literally (not imported from store.schema), as in 0006.
ROLE = "turnkeep_app"
TENANT = "(SELECT current_setting('turnkeep.tenant', true))"
USING = f"tenant_id = {TENANT} OR {TENANT} = '*'"
TABLES = ("eval_datasets", "eval_cases", "eval_experiments", "eval_results", "agent_promotions")


def _text(name: str, *, nullable: bool = False) -> sa.Column[Any]:
    return sa.Column(name, sa.Text(), nullable=nullable)


def _jsonb(name: str, *, nullable: bool = False) -> sa.Column[Any]:
    return sa.Column(name, postgresql.JSONB(astext_type=sa.Text()), nullable=nullable)


def _at(name: str, *, nullable: bool = False) -> sa.Column[Any]:
    default = None if nullable else sa.text("now()")
    return sa.Column(name, sa.DateTime(timezone=True), server_default=default, nullable=nullable)


def upgrade() -> None:
    op.create_table(
        "eval_datasets",
        _text("tenant_id"),
        _text("name"),
        sa.Column("version", sa.Integer(), nullable=False),
        _text("cases_hash"),
        sa.Column("case_count", sa.Integer(), nullable=False),
        _text("created_by"),
        _at("created_at"),
        sa.CheckConstraint("version >= 1", name=op.f("ck_eval_datasets_version")),
        sa.CheckConstraint("case_count >= 0", name=op.f("ck_eval_datasets_case_count")),
        sa.PrimaryKeyConstraint("tenant_id", "name", "version", name="pk_eval_datasets"),
    )
    op.create_index(
        "ux_eval_datasets_hash",
        "eval_datasets",
        ["tenant_id", "name", "cases_hash"],
        unique=True,
    )
    op.create_table(
        "eval_cases",
        _text("tenant_id"),
        _text("dataset"),
        sa.Column("version", sa.Integer(), nullable=False),
        _text("case_id"),
        sa.Column("ordinal", sa.Integer(), nullable=False),
        _jsonb("input"),
        _jsonb("assertions"),
        _jsonb("source", nullable=True),
        sa.CheckConstraint("ordinal >= 1", name=op.f("ck_eval_cases_ordinal")),
        sa.ForeignKeyConstraint(
            ["tenant_id", "dataset", "version"],
            ["eval_datasets.tenant_id", "eval_datasets.name", "eval_datasets.version"],
            name="fk_eval_cases_tenant_id",
        ),
        sa.PrimaryKeyConstraint("tenant_id", "dataset", "version", "case_id", name="pk_eval_cases"),
    )
    op.create_table(
        "eval_experiments",
        _text("tenant_id"),
        _text("experiment_id"),
        _text("dataset"),
        sa.Column("dataset_version", sa.Integer(), nullable=False),
        _text("agent_name"),
        _text("agent_version"),
        _text("agent_hash"),
        _text("spec_hash"),
        _jsonb("approvals"),
        _jsonb("judge", nullable=True),
        sa.Column("concurrency", sa.Integer(), nullable=False),
        sa.Column("recovery", sa.Boolean(), server_default=sa.text("false"), nullable=False),
        _text("state"),
        _text("created_by"),
        _at("created_at"),
        _at("updated_at"),
        _at("completed_at", nullable=True),
        sa.CheckConstraint(
            "state IN ('cancelled', 'completed', 'running')", name=op.f("ck_eval_experiments_state")
        ),
        sa.CheckConstraint(
            "concurrency BETWEEN 1 AND 64", name=op.f("ck_eval_experiments_concurrency")
        ),
        sa.ForeignKeyConstraint(
            ["tenant_id", "dataset", "dataset_version"],
            ["eval_datasets.tenant_id", "eval_datasets.name", "eval_datasets.version"],
            name="fk_eval_experiments_tenant_id",
        ),
        sa.PrimaryKeyConstraint("tenant_id", "experiment_id", name="pk_eval_experiments"),
    )
    op.create_index(
        "ix_eval_experiments_running",
        "eval_experiments",
        ["updated_at"],
        postgresql_where=sa.text("state = 'running'"),
    )
    op.create_index("ix_eval_experiments_created", "eval_experiments", ["tenant_id", "created_at"])
    op.create_index(
        "ix_eval_experiments_agent",
        "eval_experiments",
        ["tenant_id", "agent_name", "agent_version", "dataset", "dataset_version"],
    )
    op.create_table(
        "eval_results",
        _text("tenant_id"),
        _text("experiment_id"),
        _text("case_id"),
        sa.Column("ordinal", sa.Integer(), nullable=False),
        _text("state"),
        _text("session_id"),
        _text("turn_id"),
        sa.Column("passed", sa.Boolean(), nullable=True),
        _jsonb("score", nullable=True),
        _text("judge_state", nullable=True),
        _jsonb("judge", nullable=True),
        _at("updated_at"),
        sa.CheckConstraint(
            "state IN ('pending', 'running', 'scored')", name=op.f("ck_eval_results_state")
        ),
        sa.CheckConstraint(
            "judge_state IS NULL OR judge_state IN ('done', 'failed', 'pending', 'running')",
            name=op.f("ck_eval_results_judge_state"),
        ),
        sa.CheckConstraint(
            "(state = 'scored') = (score IS NOT NULL)", name=op.f("ck_eval_results_scored")
        ),
        sa.ForeignKeyConstraint(
            ["tenant_id", "experiment_id"],
            ["eval_experiments.tenant_id", "eval_experiments.experiment_id"],
            name="fk_eval_results_tenant_id",
        ),
        sa.PrimaryKeyConstraint("tenant_id", "experiment_id", "case_id", name="pk_eval_results"),
    )
    op.create_index(
        "ix_eval_results_state", "eval_results", ["tenant_id", "experiment_id", "state"]
    )
    op.create_table(
        "agent_promotions",
        _text("tenant_id"),
        _text("agent_name"),
        sa.Column("seq", sa.BigInteger(), nullable=False),
        _text("version"),
        _text("definition_hash"),
        sa.Column("accepted", sa.Boolean(), nullable=False),
        _text("default_before", nullable=True),
        _text("subject"),
        _jsonb("policy"),
        _jsonb("checks"),
        _jsonb("experiments"),
        _at("created_at"),
        sa.CheckConstraint("seq >= 1", name=op.f("ck_agent_promotions_seq")),
        sa.PrimaryKeyConstraint("tenant_id", "agent_name", "seq", name="pk_agent_promotions"),
    )
    for table in TABLES:
        op.execute(f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY")
        op.execute(f"ALTER TABLE {table} FORCE ROW LEVEL SECURITY")
        op.execute(f"CREATE POLICY tenant_isolation ON {table} USING ({USING})")
        op.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE ON {table} TO {ROLE}")
    # the journal of promotions is append-only for the application
    op.execute(f"REVOKE UPDATE, DELETE ON agent_promotions FROM {ROLE}")


def downgrade() -> None:
    for table in reversed(TABLES):
        op.drop_table(table)
