"""The evaluation plane's tables (store/schema.py gathers them; migration 0019;
docs/evaluation.md): datasets and their cases, experiments and their per-case results,
and the journal of agents' promotions. Every one is keyed by tenant first and under
the tenant policy (``TENANT_TABLES``).

State names the statements compare are parameters, never literals in SQL
(store/experiments.py renders them from ``RESULT_STATES`` and the like, and the
CHECKs below list the same tuples)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import (
    DDL,
    BigInteger,
    Boolean,
    CheckConstraint,
    Column,
    DateTime,
    ForeignKeyConstraint,
    Index,
    Integer,
    PrimaryKeyConstraint,
    Table,
    Text,
    event,
    func,
    text,
)
from sqlalchemy.dialects.postgresql import JSONB

from turnkeep.runtime.settings import APP_ROLE
from turnkeep.store.schema_base import in_list, metadata

#: an experiment's states (turnkeep/evaluation.py ``ExperimentState``)
EXPERIMENT_STATES = ("running", "completed", "cancelled")
#: a case's result: not admitted, its turn running, scored
RESULT_STATES = ("pending", "running", "scored")
#: a case's judge: to be admitted, its turn running, scored, failed
JUDGE_STATES = ("pending", "running", "done", "failed")


def _now(name: str, nullable: bool = False) -> Column[Any]:
    default = None if nullable else func.now()
    return Column(name, DateTime(timezone=True), nullable=nullable, server_default=default)


# One immutable version of a named dataset: created once with its cases, never
# changed; the same cases again answer the version that has them (cases_hash)
eval_datasets = Table(
    "eval_datasets",
    metadata,
    Column("tenant_id", Text, nullable=False),
    Column("name", Text, nullable=False),
    Column("version", Integer, nullable=False),
    Column("cases_hash", Text, nullable=False),
    Column("case_count", Integer, nullable=False),
    Column("created_by", Text, nullable=False),
    _now("created_at"),
    PrimaryKeyConstraint("tenant_id", "name", "version"),
    CheckConstraint("version >= 1", name="version"),
    CheckConstraint("case_count >= 0", name="case_count"),
)
Index(
    "ux_eval_datasets_hash",
    eval_datasets.c.tenant_id,
    eval_datasets.c.name,
    eval_datasets.c.cases_hash,
    unique=True,
)

# A case of a dataset version: its input and its assertions (turnkeep/assertions.py,
# a never_appears sealed), and the real turn it was made from, if any
eval_cases = Table(
    "eval_cases",
    metadata,
    *(Column(c, Text, nullable=False) for c in ("tenant_id", "dataset")),
    Column("version", Integer, nullable=False),
    Column("case_id", Text, nullable=False),
    Column("ordinal", Integer, nullable=False),
    Column("input", JSONB, nullable=False),
    Column("assertions", JSONB, nullable=False),
    Column("source", JSONB, nullable=True),
    PrimaryKeyConstraint("tenant_id", "dataset", "version", "case_id"),
    ForeignKeyConstraint(
        ["tenant_id", "dataset", "version"],
        ["eval_datasets.tenant_id", "eval_datasets.name", "eval_datasets.version"],
    ),
    CheckConstraint("ordinal >= 1", name="ordinal"),
)

# A dataset version run against an agent version (recovery/experiments.py drives it):
# its spec as asked (spec_hash: what a replay of its creation must match)
eval_experiments = Table(
    "eval_experiments",
    metadata,
    *(Column(c, Text, nullable=False) for c in ("tenant_id", "experiment_id", "dataset")),
    Column("dataset_version", Integer, nullable=False),
    *(
        Column(c, Text, nullable=False)
        for c in ("agent_name", "agent_version", "agent_hash", "spec_hash")
    ),
    Column("approvals", JSONB, nullable=False),
    Column("judge", JSONB, nullable=True),
    Column("concurrency", Integer, nullable=False),
    Column("recovery", Boolean, nullable=False, server_default=text("false")),
    Column("state", Text, nullable=False),
    Column("created_by", Text, nullable=False),
    _now("created_at"),
    _now("updated_at"),
    _now("completed_at", nullable=True),
    PrimaryKeyConstraint("tenant_id", "experiment_id"),
    ForeignKeyConstraint(
        ["tenant_id", "dataset", "dataset_version"],
        ["eval_datasets.tenant_id", "eval_datasets.name", "eval_datasets.version"],
    ),
    CheckConstraint(in_list("state", EXPERIMENT_STATES), name="state"),
    CheckConstraint("concurrency BETWEEN 1 AND 64", name="concurrency"),
)
_x = eval_experiments.c
# the driver's pass over the running ones, across tenants (scan_experiments)
Index("ix_eval_experiments_running", _x.updated_at, postgresql_where=text("state = 'running'"))
# a tenant's experiments newest first, and the gate's newest completed run of a version
Index("ix_eval_experiments_created", _x.tenant_id, _x.created_at)
Index(
    "ix_eval_experiments_agent",
    _x.tenant_id,
    _x.agent_name,
    _x.agent_version,
    _x.dataset,
    _x.dataset_version,
)

# A case of an experiment: its turn (ids derived from experiment and case:
# runtime/evaluation/case_ids.py), its score once the turn ended (the figures and each
# assertion's result), and its judge's
eval_results = Table(
    "eval_results",
    metadata,
    *(Column(c, Text, nullable=False) for c in ("tenant_id", "experiment_id", "case_id")),
    Column("ordinal", Integer, nullable=False),
    Column("state", Text, nullable=False),
    *(Column(c, Text, nullable=False) for c in ("session_id", "turn_id")),
    Column("passed", Boolean, nullable=True),
    Column("score", JSONB, nullable=True),
    Column("judge_state", Text, nullable=True),
    Column("judge", JSONB, nullable=True),
    _now("updated_at"),
    PrimaryKeyConstraint("tenant_id", "experiment_id", "case_id"),
    ForeignKeyConstraint(
        ["tenant_id", "experiment_id"],
        ["eval_experiments.tenant_id", "eval_experiments.experiment_id"],
    ),
    CheckConstraint(in_list("state", RESULT_STATES), name="state"),
    CheckConstraint(
        f"judge_state IS NULL OR {in_list('judge_state', JUDGE_STATES)}", name="judge_state"
    ),
    CheckConstraint("(state = 'scored') = (score IS NOT NULL)", name="scored"),
)
_r = eval_results.c
Index("ix_eval_results_state", _r.tenant_id, _r.experiment_id, _r.state)

# The journal of an agent's versions: each promote, accepted or refused, who, when,
# the policy, its checks and the experiments they read. Append-only: the application's
# role may read and insert, never update or delete (the grant below)
agent_promotions = Table(
    "agent_promotions",
    metadata,
    *(Column(c, Text, nullable=False) for c in ("tenant_id", "agent_name")),
    Column("seq", BigInteger, nullable=False),
    *(Column(c, Text, nullable=False) for c in ("version", "definition_hash")),
    Column("accepted", Boolean, nullable=False),
    Column("default_before", Text, nullable=True),
    Column("subject", Text, nullable=False),
    *(Column(c, JSONB, nullable=False) for c in ("policy", "checks", "experiments")),
    _now("created_at"),
    PrimaryKeyConstraint("tenant_id", "agent_name", "seq"),
    CheckConstraint("seq >= 1", name="seq"),
)

#: the tables above, all under the tenant policy (store/schema.py TENANT_TABLES)
EVAL_TABLES = (
    "eval_datasets",
    "eval_cases",
    "eval_experiments",
    "eval_results",
    "agent_promotions",
)

#: after row security granted the application's role every row operation on each
#: tenant table (store/row_security.py), the promotions' journal loses two of them
APPEND_ONLY = f"REVOKE UPDATE, DELETE ON agent_promotions FROM {APP_ROLE}"
event.listen(metadata, "after_create", DDL(APPEND_ONLY))  # type: ignore[no-untyped-call]
