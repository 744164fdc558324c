"""Deploys: operators' upgrades of turns to their agent's newest version, and the
active turns by definition (the statements of sql/upgrades.sql; docs/deploy.md)."""

from __future__ import annotations

from turnkeep.store.statements import Statements


class Upgrades(Statements):
    """What ``GET /v1/agents/{name}/versions`` and the upgrade routes ask of the store."""

    def request_upgrade(self, tenant_id: str, session_id: str, turn_id: str) -> str | None:
        """Flag one active turn for an upgrade; the session id to enqueue, or None
        when no such turn is active (the caller tells missing from ended)."""
        row = self._one(
            "request_upgrade",
            {"tenant_id": tenant_id, "session_id": session_id, "turn_id": turn_id},
        )
        return None if row is None else str(row["session_id"])

    def request_upgrades(self, tenant_id: str, agent_name: str, agent_hash: str) -> list[str]:
        """Flag every active turn of the tenant on one definition; the session of each
        turn flagged now (a session once per turn of it)."""
        rows = self._rows(
            "request_upgrades",
            {"tenant_id": tenant_id, "agent_name": agent_name, "agent_hash": agent_hash},
        )
        return [str(r["session_id"]) for r in rows]

    def turns_by_definition(self, tenant_id: str, agent_name: str) -> dict[str, dict[str, int]]:
        """The tenant's active turns of ``agent_name``: {hash: {state: count}}."""
        rows = self._rows("turns_by_definition", {"tenant_id": tenant_id, "agent_name": agent_name})
        out: dict[str, dict[str, int]] = {}
        for r in rows:
            out.setdefault(str(r["agent_hash"]), {})[str(r["state"])] = int(r["n"])
        return out
