"""A new turn as admission writes it: built once by the one admission
(store/admission.py) from what its source asked and the input's identity, and passed
to the statement that writes it (``Store.turns.admit``, ``Store.reruns.admit_rerun``),
which reads its parameters from here."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from turnkeep.runtime.multitask import Multitask
from turnkeep.store.records import WebhookSpec
from turnkeep.store.rows import jsonb


@dataclass(frozen=True, slots=True)
class Bounds:
    """What the admission is held to, from the settings and the source's rules: the
    queued quotas (None: none) and the tenant's default session TTL."""

    max_queued_session: int | None = None
    max_queued_tenant: int | None = None
    default_ttl: float | None = None


UNBOUNDED = Bounds()


@dataclass(frozen=True, slots=True)
class NewTurn:
    tenant_id: str
    session_id: str
    turn_id: str
    agent_name: str
    agent_hash: str
    #: the input's identity (runtime/admission.py's recipe)
    input_hash: str
    input: Mapping[str, Any]
    output_schema: Mapping[str, Any] | None = None
    budget: Mapping[str, Any] | None = None
    #: the subject it is admitted as
    submitted_by: str = ""
    multitask: Multitask = Multitask.ENQUEUE
    #: a workflow node's webhook, written in the turn's transaction
    webhook: WebhookSpec | None = None
    #: the project a new session is created in
    project_id: str | None = None
    agent_version: str = ""
    on_deploy: str = "upgrade"
    #: the session's own TTL, when the request names one
    expires_after: int | None = None
    #: the turn's labels; a new session's (and the ones an existing one must have)
    metadata: Mapping[str, str] | None = None
    session_metadata: Mapping[str, str] | None = None

    def params(self, bounds: Bounds) -> dict[str, Any]:
        """The parameters of ``admit_turn`` and ``admit_rerun`` (each reads the ones
        it names)."""
        return {
            "tenant_id": self.tenant_id,
            "session_id": self.session_id,
            "turn_id": self.turn_id,
            "agent_name": self.agent_name,
            "agent_hash": self.agent_hash,
            "input_hash": self.input_hash,
            "input": jsonb(dict(self.input)),
            "output_schema": jsonb(self.output_schema),
            "budget": jsonb(self.budget),
            "submitted_by": self.submitted_by,
            "reject": self.multitask is Multitask.REJECT,
            # an interrupt cancels every earlier turn: the lane cannot pile up
            "max_session": (
                None if self.multitask is Multitask.INTERRUPT else bounds.max_queued_session
            ),
            "max_tenant": bounds.max_queued_tenant,
            "project_id": self.project_id,
            "agent_version": self.agent_version,
            "on_deploy": self.on_deploy,
            "expires_after": self.expires_after,
            "default_ttl": bounds.default_ttl,
            "metadata": jsonb(self.metadata or None),
            "session_metadata": jsonb(self.session_metadata or None),
        }
