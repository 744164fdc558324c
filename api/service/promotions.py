"""Promotion: a version of a gated agent becomes the default for the tenant's new turns
only through ``promote``, which checks the agent's declared policy against the
tenant's experiments and appends the outcome, accepted or refused, to the agent's
promotion journal (runtime/evaluation/gate.py, docs/evaluation.md "Promotion").

Which version a new turn gets is api/service/defaults.py's."""

from __future__ import annotations

from typing import Any

from turnkeep.api.auth import Principal
from turnkeep.api.errors import AdminOnly, AgentNotGated, PromotionRefused
from turnkeep.api.resources import ApiResources
from turnkeep.api.service.defaults import agent_for
from turnkeep.api.service.experiments import experiment_model
from turnkeep.evaluation import Experiment
from turnkeep.runtime.evaluation.gate import Evidence, checks
from turnkeep.runtime.tokens import TenantRole
from turnkeep.store.errors import NotFound
from turnkeep.store.promotions import PromotionRecord


def promotion_json(p: PromotionRecord) -> dict[str, Any]:
    return {
        "agent": p.agent_name,
        "seq": p.seq,
        "version": p.version,
        "definition_hash": p.definition_hash,
        "accepted": p.accepted,
        "default_before": p.default_before,
        "by": p.subject,
        "at": p.created_at.isoformat(),
        "checks": p.checks,
        "experiments": p.experiments,
    }


def journal(services: ApiResources, principal: Principal, name: str) -> dict[str, Any]:
    """``GET /v1/agents/{name}/promotions``: the default, the policy, the journal."""
    default = agent_for(services, principal.tenant, name)
    policy = services.registry.policy(name)
    return {
        "agent": name,
        "gated": policy is not None,
        "default_version": default.version,
        "policy": None if policy is None else policy.describe(),
        "promotions": [
            promotion_json(p)
            for p in services.store.promotions.list_promotions(principal.tenant, name)
        ],
    }


def _newest(
    services: ApiResources,
    tenant: str,
    agent: str,
    version: str,
    dataset: str,
    dv: int,
    drill: bool,
) -> Experiment | None:
    store = services.store
    found = store.experiments.newest_completed(
        tenant,
        agent_name=agent,
        agent_version=version,
        dataset=dataset,
        dataset_version=dv,
        recovery=drill,
    )
    if found is None:
        return None
    return experiment_model(
        found, store.experiments.experiment_results(tenant, found.experiment_id)
    )


def _evidence(
    services: ApiResources, tenant: str, name: str, candidate: str, default: str, dataset: str
) -> Evidence:
    try:
        dv = services.store.datasets.get_dataset_version(tenant, dataset).version
    except NotFound:
        return Evidence(dataset, None)
    return Evidence(
        dataset,
        dv,
        candidate=_newest(services, tenant, name, candidate, dataset, dv, False),
        default=_newest(services, tenant, name, default, dataset, dv, False),
        drill=_newest(services, tenant, name, candidate, dataset, dv, True),
    )


def promote(
    services: ApiResources, principal: Principal, name: str, version: str
) -> dict[str, Any]:
    """Check ``version`` of ``name`` against its policy and record the outcome: the
    journal's entry when accepted (new turns get the version from then on), else
    ``PromotionRefused`` listing each failed check (recorded all the same). An admin's;
    ``AgentNotGated`` for an agent without a policy; ``PromotionConflict`` when another
    promotion was recorded while this one checked."""
    if principal.role != TenantRole.ADMIN:
        raise AdminOnly("only an admin may promote a version")
    candidate = services.registry.get(name, version)  # UnknownAgent: 422
    policy = services.registry.policy(name)
    if policy is None:
        raise AgentNotGated(f"agent {name!r} declares no promotion policy")
    tenant = principal.tenant
    promoted = services.store.promotions.promoted_versions(tenant, name, limit=1)
    default = agent_for(services, tenant, name)
    evidence = [
        _evidence(services, tenant, name, candidate.version, default.version, d)
        for d in policy.datasets
    ]
    found = checks(policy, candidate.version, default.version, evidence)
    failed = [c for c in found if not c.passed]
    read = sorted({e for c in found for e in c.experiments})
    entry = services.store.promotions.record_promotion(
        tenant,
        name,
        version=candidate.version,
        definition_hash=services.agent_hash(candidate),
        accepted=not failed,
        default_before=default.version,
        promoted_before=promoted[0] if promoted else None,
        subject=principal.subject,
        policy=policy.describe(),
        checks=[c.model_dump(mode="json") for c in found],
        experiments=read,
    )
    if failed:
        raise PromotionRefused(entry.seq, [c.model_dump(mode="json") for c in failed])
    return promotion_json(entry)
