"""Participant bindings of the chat bridges (the statements of sql/bridges.sql): who
a sender of a bridge is in turnkeep, inside the tenant its workspace is assigned to.
api/service/bridges.py reads them on every inbound message; api/http/bindings.py
manages them."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, fields
from datetime import datetime

from turnkeep.store.db import Row
from turnkeep.store.errors import NotFound, StoreError
from turnkeep.store.statements import Statements

#: a binding's channel that stands for every channel of its workspace
ANY_CHANNEL = "*"


class BindingTaken(StoreError):
    """Raised when a binding names a sender (bridge, workspace, channel, user) that has a
    live binding already, of this tenant or another: nothing is written."""

    code = "binding_taken"
    status = 409
    public = "that sender is bound already; revoke its binding first"


@dataclass(frozen=True)
class BindingRecord:
    """A row of ``bridge_bindings`` (store/schema.py)."""

    tenant_id: str
    binding_id: str
    bridge: str
    workspace: str
    channel: str
    user_id: str
    subject: str
    role: str
    agent: str
    reply_url: str | None
    created_by: str
    created_at: datetime
    revoked_at: datetime | None

    @property
    def live(self) -> bool:
        return self.revoked_at is None


_FIELDS = tuple(f.name for f in fields(BindingRecord))


def _record(row: Row) -> BindingRecord:
    return BindingRecord(**{name: row[name] for name in _FIELDS})


@dataclass(frozen=True)
class Sender:
    """Who sent an inbound message, as its bridge names them."""

    bridge: str
    workspace: str
    channel: str
    user_id: str


class Bridges(Statements):
    """Bindings: created, listed and revoked by a tenant; found for a sender."""

    def create_binding(
        self,
        tenant_id: str,
        sender: Sender,
        *,
        subject: str,
        role: str,
        agent: str,
        created_by: str,
        reply_url: str | None = None,
    ) -> BindingRecord:
        row = self._one(
            "create_binding",
            {
                "tenant_id": tenant_id,
                "binding_id": f"bnd_{uuid.uuid4().hex[:16]}",
                "bridge": sender.bridge,
                "workspace": sender.workspace,
                "channel": sender.channel,
                "user_id": sender.user_id,
                "subject": subject,
                "role": role,
                "agent": agent,
                "reply_url": reply_url,
                "created_by": created_by,
            },
        )
        if row is None:
            raise BindingTaken(f"{sender.bridge} sender {sender.user_id!r} is bound already")
        return _record(row)

    def list_bindings(self, tenant_id: str) -> list[BindingRecord]:
        return [_record(r) for r in self._rows("list_bindings", {"tenant_id": tenant_id})]

    def revoke_binding(self, tenant_id: str, binding_id: str) -> BindingRecord:
        row = self._one("revoke_binding", {"tenant_id": tenant_id, "binding_id": binding_id})
        if row is None:
            raise NotFound("binding not found")
        return _record(row)

    def find_binding(self, tenant_id: str, sender: Sender) -> BindingRecord | None:
        """The live binding of ``sender`` in ``tenant_id``: its channel's, else its
        workspace-wide one."""
        row = self._one(
            "find_binding",
            {
                "tenant_id": tenant_id,
                "bridge": sender.bridge,
                "workspace": sender.workspace,
                "channel": sender.channel,
                "user_id": sender.user_id,
                "any_channel": ANY_CHANNEL,
            },
        )
        return None if row is None else _record(row)
