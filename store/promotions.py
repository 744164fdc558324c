"""The journal of an agent's promotions (the statements of sql/promotions.sql): each
``promote``, accepted or refused, appended by compare-and-swap on the version last
promoted; the application's role may never change or delete an entry
(store/schema_eval.py)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from turnkeep.store.db import Row
from turnkeep.store.errors import StoreError
from turnkeep.store.rows import jsonb
from turnkeep.store.statements import Statements


@dataclass(frozen=True)
class PromotionRecord:
    tenant_id: str
    agent_name: str
    seq: int
    version: str
    definition_hash: str
    accepted: bool
    default_before: str | None
    subject: str
    policy: dict[str, Any]
    checks: list[dict[str, Any]]
    experiments: list[str]
    created_at: datetime


def promotion_record(row: Row) -> PromotionRecord:
    return PromotionRecord(**{k: row[k] for k in PromotionRecord.__dataclass_fields__})


class PromotionConflict(StoreError):
    """Raised when another promotion of the agent was recorded between a promote's
    reading of the default and its own entry: its checks compared against a default
    that is no longer the default, so nothing was recorded (promote again)."""

    code = "promotion_conflict"
    status = 409
    title = "Another promotion came first"
    public = "another promotion of this agent was recorded meanwhile: promote again"


class Promotions(Statements):
    """``POST /v1/agents/{name}/versions/{version}/promote`` and its journal."""

    def record_promotion(
        self,
        tenant_id: str,
        agent_name: str,
        *,
        version: str,
        definition_hash: str,
        accepted: bool,
        default_before: str | None,
        promoted_before: str | None,
        subject: str,
        policy: Mapping[str, Any],
        checks: Sequence[Mapping[str, Any]],
        experiments: Sequence[str],
    ) -> PromotionRecord:
        """Append an entry; ``PromotionConflict`` when the newest accepted promotion is
        no longer ``promoted_before``."""
        row = self._one(
            "record_promotion",
            {
                "tenant_id": tenant_id,
                "agent_name": agent_name,
                "version": version,
                "definition_hash": definition_hash,
                "accepted": accepted,
                "default_before": default_before,
                "promoted_before": promoted_before,
                "subject": subject,
                "policy": jsonb(dict(policy)),
                "checks": jsonb([dict(c) for c in checks]),
                "experiments": jsonb(list(experiments)),
            },
        )
        if row is None:
            raise PromotionConflict(f"agent {agent_name!r}: the promoted version moved")
        return promotion_record(row)

    def list_promotions(
        self, tenant_id: str, agent_name: str, limit: int = 100
    ) -> list[PromotionRecord]:
        params = {"tenant_id": tenant_id, "agent_name": agent_name, "limit": limit}
        return [promotion_record(r) for r in self._rows("list_promotions", params)]

    def promoted_versions(self, tenant_id: str, agent_name: str, limit: int = 100) -> list[str]:
        """The versions of the agent's accepted promotions, newest first."""
        params = {"tenant_id": tenant_id, "agent_name": agent_name, "limit": limit}
        return [str(r["version"]) for r in self._rows("promoted_versions", params)]

    def promoted_versions_of(
        self, tenant_id: str, agent_names: Sequence[str], limit: int = 100
    ) -> dict[str, list[str]]:
        """``promoted_versions`` of each agent named, in one statement (an agent with
        no accepted promotion is left out)."""
        params = {"tenant_id": tenant_id, "agent_names": list(agent_names), "limit": limit}
        found: dict[str, list[str]] = {}
        for r in self._rows("promoted_versions_of", params):
            found.setdefault(str(r["agent_name"]), []).append(str(r["version"]))
        return found
