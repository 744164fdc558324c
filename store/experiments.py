"""Experiments in the store (the statements of sql/experiments.sql): an experiment and
its per-case results, created together; the driver's claim, scoring and finish, each
a compare-and-swap, so two drivers of one experiment (beat's and a prompt one) write
each case's outcome once (recovery/experiments.py)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from turnkeep.runtime.evaluation.summary import CANCELLED, FAILED, NONE_OF, Totals
from turnkeep.runtime.states import TurnState
from turnkeep.store.db import Row
from turnkeep.store.errors import IdempotencyConflict, NotFound
from turnkeep.store.rows import first, jsonb
from turnkeep.store.schema_eval import EXPERIMENT_STATES, JUDGE_STATES, RESULT_STATES
from turnkeep.store.statements import Statements

#: the state names every statement takes as parameters (store/schema_eval.py)
STATES: dict[str, str] = {
    **{s: s for s in EXPERIMENT_STATES},
    **{s: s for s in RESULT_STATES},
    **{f"judge_{s}": s for s in JUDGE_STATES},
}


@dataclass(frozen=True)
class ExperimentRecord:
    tenant_id: str
    experiment_id: str
    dataset: str
    dataset_version: int
    agent_name: str
    agent_version: str
    agent_hash: str
    spec_hash: str
    approvals: dict[str, Any]
    judge: dict[str, Any] | None
    concurrency: int
    recovery: bool
    state: str
    created_by: str
    created_at: datetime
    updated_at: datetime
    completed_at: datetime | None


@dataclass(frozen=True)
class ResultRecord:
    case_id: str
    ordinal: int
    state: str
    session_id: str
    turn_id: str
    passed: bool | None
    score: dict[str, Any] | None
    judge_state: str | None
    judge: dict[str, Any] | None


def experiment_record(row: Row) -> ExperimentRecord:
    return ExperimentRecord(**{k: row[k] for k in ExperimentRecord.__dataclass_fields__})


def result_record(row: Row) -> ResultRecord:
    return ResultRecord(**{k: row[k] for k in ResultRecord.__dataclass_fields__})


def totals_record(row: Row) -> Totals:
    """The sums ``list_experiments`` added up (SQL's sum of no row is NULL: zero)."""
    scored = int(row["scored"])
    clean = row["none_of_clean"]
    return Totals(
        cases=int(row["cases"]),
        scored=scored,
        passed=int(row["passed"]),
        cost_usd=float(row["cost_usd"] or 0),
        tokens=int(row["tokens"] or 0),
        steps=int(row["steps"] or 0),
        latency_ms_sum=int(row["latency_ms_sum"] or 0),
        latency_ms_count=int(row["latency_ms_count"]),
        latency_ms_max=None if row["latency_ms_max"] is None else int(row["latency_ms_max"]),
        recovered=int(row["recovered"] or 0),
        # no none-of assertion among the scored cases: clean
        none_of_clean=(True if clean is None else bool(clean)) if scored else None,
        failures={str(k): int(v) for k, v in row["failures"].items()},
        judge_cost_usd=float(row["judge_cost_usd"] or 0),
        judge_score_sum=float(row["judge_score_sum"] or 0),
        judged=int(row["judged"]),
    )


#: what ``list_experiments`` counts by: the scored turns' states and the codes of
#: failures without one of their own, a none-of assertion's category
SUMS: dict[str, str] = {
    "turn_failed": TurnState.FAILED.value,
    "turn_cancelled": TurnState.CANCELLED.value,
    "failed_code": FAILED,
    "cancelled_code": CANCELLED,
    "none_of": NONE_OF,
}


def _ids(tenant_id: str, experiment_id: str, **more: Any) -> dict[str, Any]:
    return {**STATES, "tenant_id": tenant_id, "experiment_id": experiment_id, **more}


class Experiments(Statements):
    """``/v1/experiments`` (api/service/experiments.py) and the driver
    (recovery/experiments.py)."""

    def create_experiment(self, *, case_prefix: str, **spec: Any) -> tuple[ExperimentRecord, bool]:
        """Create it with one pending result per case of its dataset version, in one
        transaction, idempotent by its id: (the experiment, whether this call created
        it). The same id with another spec (``spec_hash``): ``IdempotencyConflict``."""
        params = {
            **STATES,
            **spec,
            "approvals": jsonb(spec["approvals"]),
            "judge": jsonb(spec["judge"]),
            "case_prefix": case_prefix,
        }
        with self.connector.transaction(spec["tenant_id"]) as tx:
            row = first(tx.rows("create_experiment", params))
            if row is not None:
                tx.rows("insert_results", params)
                return experiment_record(row), True
        found = self.get_experiment(spec["tenant_id"], spec["experiment_id"])
        if found.spec_hash != spec["spec_hash"]:
            raise IdempotencyConflict(
                f"experiment {spec['experiment_id']!r} exists with another spec"
            )
        return found, False

    def get_experiment(self, tenant_id: str, experiment_id: str) -> ExperimentRecord:
        row = self._one("get_experiment", _ids(tenant_id, experiment_id))
        if row is None:
            raise NotFound("experiment not found")
        return experiment_record(row)

    def list_experiments(
        self,
        tenant_id: str,
        *,
        dataset: str | None = None,
        agent_name: str | None = None,
        limit: int = 100,
    ) -> list[tuple[ExperimentRecord, Totals]]:
        """Newest first, each with its sums over its cases, in one statement (what
        ``experiment_results`` would give ``totals``, for every experiment at once)."""
        params = {"tenant_id": tenant_id, "dataset": dataset, "agent_name": agent_name}
        rows = self._rows("list_experiments", {**params, **STATES, **SUMS, "limit": limit})
        return [(experiment_record(r), totals_record(r)) for r in rows]

    def experiment_results(self, tenant_id: str, experiment_id: str) -> list[ResultRecord]:
        rows = self._rows("experiment_results", _ids(tenant_id, experiment_id))
        return [result_record(r) for r in rows]

    def claim_cases(self, tenant_id: str, experiment_id: str) -> list[ResultRecord]:
        """Pending cases to running, as many as the experiment's window has room for
        (none once it is no longer running), under a lock of the experiment's row."""
        with self.connector.transaction(tenant_id) as tx:
            locked = first(tx.rows("lock_experiment", _ids(tenant_id, experiment_id)))
            if locked is None:
                return []
            params = _ids(tenant_id, experiment_id, window=int(locked["concurrency"]))
            rows = tx.rows("claim_cases", params)
        return sorted((result_record(r) for r in rows), key=lambda r: r.ordinal)

    def running_cases(self, tenant_id: str, experiment_id: str) -> list[ResultRecord]:
        """Cases whose turn runs, or whose judge is to be admitted or runs."""
        rows = self._rows("running_cases", _ids(tenant_id, experiment_id))
        return [result_record(r) for r in rows]

    def score_case(
        self,
        tenant_id: str,
        experiment_id: str,
        case_id: str,
        *,
        passed: bool,
        score: Mapping[str, Any],
        judge: Mapping[str, Any] | None,
    ) -> bool:
        """Record a running case's score (and its judge, pending); False: scored already."""
        params = _ids(
            tenant_id,
            experiment_id,
            case_id=case_id,
            passed=passed,
            score=jsonb(dict(score)),
            judge=jsonb(None if judge is None else dict(judge)),
            judge_state=None if judge is None else STATES["judge_pending"],
        )
        return self._one("score_case", params) is not None

    def judge_moved(
        self,
        tenant_id: str,
        experiment_id: str,
        case_id: str,
        *,
        from_state: str,
        to_state: str,
        judge: Mapping[str, Any],
    ) -> bool:
        """A case's judge from ``from_state`` to ``to_state``; False: it was not there."""
        params = _ids(
            tenant_id,
            experiment_id,
            case_id=case_id,
            from_state=from_state,
            to_state=to_state,
            judge=jsonb(dict(judge)),
        )
        return self._one("judge_moved", params) is not None

    def finish_experiment(self, tenant_id: str, experiment_id: str) -> bool:
        """Running to completed once every case is scored and judged; False: not yet,
        or not running."""
        return self._one("finish_experiment", _ids(tenant_id, experiment_id)) is not None

    def cancel_experiment(self, tenant_id: str, experiment_id: str) -> bool:
        return self._one("cancel_experiment", _ids(tenant_id, experiment_id)) is not None

    def experiment_advanced(self, tenant_id: str, experiment_id: str) -> None:
        self._rows("experiment_advanced", _ids(tenant_id, experiment_id))

    def scan_experiments(self, limit: int = 100) -> list[tuple[str, str]]:
        """Across tenants: (tenant, experiment) of every running one, least recently
        advanced first."""
        rows = self._rows("scan_experiments", {**STATES, "limit": limit})
        return [(str(r["tenant_id"]), str(r["experiment_id"])) for r in rows]

    def newest_completed(
        self,
        tenant_id: str,
        *,
        agent_name: str,
        agent_version: str,
        dataset: str,
        dataset_version: int,
        recovery: bool = False,
    ) -> ExperimentRecord | None:
        params = {
            **STATES,
            "tenant_id": tenant_id,
            "agent_name": agent_name,
            "agent_version": agent_version,
            "dataset": dataset,
            "dataset_version": dataset_version,
            "recovery": recovery,
        }
        row = self._one("newest_completed", params)
        return None if row is None else experiment_record(row)
