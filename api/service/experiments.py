"""Experiments: a dataset version run against an agent version through the ordinary
submit path, each case a real turn in its own session on the ordinary workers, driven
by recovery/experiments.py (docs/evaluation.md "Experiments"). Here: creating one
(idempotent by its id, the ``Idempotency-Key``), reading it with its per-case results
and figures, listing, cancelling, and two side by side."""

from __future__ import annotations

import logging
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from turnkeep.api.auth import Principal
from turnkeep.api.resources import ApiResources
from turnkeep.api.service.access import may_write
from turnkeep.api.service.defaults import agent_for
from turnkeep.evaluation import (
    DATASET_NAME,
    MAX_DATASET_VERSION,
    ApprovalPolicy,
    CaseResult,
    Comparison,
    Experiment,
    ExperimentSummary,
    JudgeResult,
    JudgeSpec,
)
from turnkeep.runtime.evaluation import case_ids
from turnkeep.runtime.evaluation.summary import compare as compare_results
from turnkeep.runtime.evaluation.summary import figures, summarise
from turnkeep.runtime.hashing import sha256_hex
from turnkeep.store.errors import NotFound, TurnNotActive
from turnkeep.store.experiments import ExperimentRecord, ResultRecord

log = logging.getLogger(__name__)

#: the largest window an experiment may ask for
MAX_CONCURRENCY = 32


class ExperimentRequest(BaseModel):
    """``POST /v1/experiments``."""

    model_config = ConfigDict(extra="forbid")

    dataset: str = Field(pattern=DATASET_NAME)
    #: absent: the dataset's newest version
    dataset_version: int | None = Field(default=None, ge=1, le=MAX_DATASET_VERSION)
    agent: str = Field(min_length=1, max_length=128)
    #: absent: the version new turns get (the tenant's promoted one for a gated agent)
    agent_version: str | None = Field(default=None, min_length=1, max_length=128)
    approvals: ApprovalPolicy = Field(default_factory=ApprovalPolicy)
    judge: JudgeSpec | None = None
    #: cases whose turns run at once
    concurrency: int = Field(default=4, ge=1, le=MAX_CONCURRENCY)
    #: a recovery drill (the promotion gate's recovery check reads it)
    recovery: bool = False


def _case_result(r: ResultRecord) -> CaseResult:
    judge = None
    if r.judge_state is not None and r.judge:
        judge = JudgeResult.model_validate({**r.judge, "state": r.judge_state})
    return CaseResult.model_validate(
        {
            **(r.score or {}),
            "case_id": r.case_id,
            "ordinal": r.ordinal,
            "state": r.state,
            "session_id": r.session_id,
            "turn_id": r.turn_id,
            "passed": r.passed,
            "judge": judge,
        }
    )


def experiment_model(e: ExperimentRecord, results: list[ResultRecord]) -> Experiment:
    cases = [_case_result(r) for r in results]
    return _experiment(e, summarise(cases), cases)


def _experiment(
    e: ExperimentRecord, summary: ExperimentSummary, cases: list[CaseResult]
) -> Experiment:
    return Experiment(
        experiment_id=e.experiment_id,
        dataset=e.dataset,
        dataset_version=e.dataset_version,
        agent=e.agent_name,
        agent_version=e.agent_version,
        definition_hash=e.agent_hash,
        state=e.state,  # type: ignore[arg-type]
        approvals=ApprovalPolicy.model_validate(e.approvals),
        judge=None if e.judge is None else JudgeSpec.model_validate(e.judge),
        concurrency=e.concurrency,
        recovery=e.recovery,
        created_by=e.created_by,
        created_at=e.created_at,
        completed_at=e.completed_at,
        summary=summary,
        results=cases,
    )


def create(
    services: ApiResources, principal: Principal, experiment_id: str, body: ExperimentRequest
) -> tuple[dict[str, Any], bool]:
    """Create the experiment and its pending cases (a replay of the same request: the
    stored one, 200; another request under the id: 409). ``NotFound`` for a dataset
    (version) the tenant does not have; ``UnknownAgent`` (422) for an agent, version
    or judge not declared."""
    may_write(principal)
    tenant = principal.tenant
    dataset = services.store.datasets.get_dataset_version(
        tenant, body.dataset, body.dataset_version
    )
    agent = agent_for(services, tenant, body.agent, body.agent_version)
    judge = None
    if body.judge is not None:
        judged = services.registry.get(body.judge.agent, body.judge.version)
        judge = {**body.judge.model_dump(), "version": judged.version}
    spec = {
        "dataset": dataset.name,
        "dataset_version": dataset.version,
        "agent_name": agent.name,
        "agent_version": agent.version,
        "agent_hash": services.agent_hash(agent),
        "approvals": body.approvals.model_dump(),
        "judge": judge,
        "concurrency": body.concurrency,
        "recovery": body.recovery,
    }
    record, created = services.store.experiments.create_experiment(
        case_prefix=case_ids.prefix(experiment_id),
        tenant_id=tenant,
        experiment_id=experiment_id,
        spec_hash=sha256_hex(spec),
        created_by=principal.subject,
        **spec,
    )
    results = services.store.experiments.experiment_results(tenant, experiment_id)
    return experiment_model(record, results).model_dump(mode="json"), created


def nudge(services: ApiResources, tenant: str, experiment_id: str) -> None:
    """Have a worker advance the experiment now (after the answer; beat's pass does
    it within ``TURNKEEP_EVAL_INTERVAL`` should this send be lost)."""
    services.producer.advance_experiment(tenant, experiment_id)


def get(services: ApiResources, principal: Principal, experiment_id: str) -> Experiment:
    store = services.store
    record = store.experiments.get_experiment(principal.tenant, experiment_id)
    return experiment_model(
        record, store.experiments.experiment_results(principal.tenant, experiment_id)
    )


def listing(
    services: ApiResources,
    principal: Principal,
    *,
    dataset: str | None,
    agent: str | None,
    limit: int,
) -> dict[str, Any]:
    """``GET /v1/experiments``: newest first, each with its summary (not its cases),
    in one statement: the store sums each experiment's cases in SQL."""
    found = services.store.experiments.list_experiments(
        principal.tenant, dataset=dataset, agent_name=agent, limit=limit
    )
    return {
        "experiments": [
            _experiment(e, figures(sums), []).model_dump(mode="json") for e, sums in found
        ]
    }


def cancel(services: ApiResources, principal: Principal, experiment_id: str) -> Experiment:
    """Stop a running experiment: no more cases are admitted, and the running ones'
    turns are cancelled (what ended is kept). A finished one is answered as it is."""
    may_write(principal)
    tenant, store = principal.tenant, services.store
    store.experiments.get_experiment(tenant, experiment_id)  # NotFound
    if store.experiments.cancel_experiment(tenant, experiment_id):
        for r in store.experiments.experiment_results(tenant, experiment_id):
            if r.state != "running":
                continue
            try:
                store.turns.request_cancel(
                    tenant, r.session_id, r.turn_id, subject=principal.subject
                )
            except (NotFound, TurnNotActive):
                continue
            services.producer.enqueue(tenant, r.session_id)
    return get(services, principal, experiment_id)


def compare(services: ApiResources, principal: Principal, a: str, b: str) -> Comparison:
    """``b`` against ``a`` case by case; either of another tenant is ``NotFound``."""
    return compare_results(get(services, principal, a), get(services, principal, b))
