"""The provider state kept out of the journal (the statement of sql/provider_state.sql;
docs/erasure.md): what a provider needs handed back on its next request (Anthropic's
thinking blocks and their signatures), in its own table keyed by the model call's
event, written by that step's own statement (``Store.append``)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from turnkeep.store.statements import Statements


class ProviderState(Statements):
    """Reads of ``provider_state``, for the worker building a provider's request."""

    def provider_state(
        self, tenant_id: str, session_id: str, provider: str, seqs: Iterable[int]
    ) -> dict[int, dict[str, Any]]:
        """The state ``provider`` left with the model calls at ``seqs``, by seq (none
        for a call of another provider, or one that left none). One read."""
        wanted = sorted(set(seqs))
        if not wanted:
            return {}
        rows = self._rows(
            "read_provider_state",
            {
                "tenant_id": tenant_id,
                "session_id": session_id,
                "provider": provider,
                "seqs": wanted,
            },
        )
        return {int(r["seq"]): r["data"] for r in rows}
