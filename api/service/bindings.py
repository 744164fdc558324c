"""Participant bindings of the chat bridges, managed by a tenant's admin
(docs/bridges.md): which sender of a bridge (workspace, channel, user) is which
subject of the tenant, with which role, answered by which agent, inside a workspace
the operator assigned to the tenant. A binding is revoked, never edited: bind again to
change one."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from turnkeep.api.auth import Principal
from turnkeep.api.errors import AdminOnly, WorkspaceNotFound
from turnkeep.api.resources import ApiResources
from turnkeep.api.service.requests import NO_NUL
from turnkeep.runtime import webhooks
from turnkeep.runtime.bridges import GENERIC, tenant_of
from turnkeep.runtime.tokens import SUBJECT_PATTERN, TenantRole
from turnkeep.store.bridges import BindingRecord, Sender

_Name = Field(min_length=1, max_length=200, pattern=r"^[^\x00\s]+$")


class BindingRequest(BaseModel):
    """``POST /v1/bridges/bindings``."""

    model_config = ConfigDict(extra="forbid")

    bridge: Literal["slack", "generic"]
    #: Slack: the team id (``T…``)
    workspace: str = _Name
    #: Slack: the channel id (``C…``); ``*``: every channel of the workspace
    channel: str = _Name
    #: Slack: the user id (``U…``)
    user: str = _Name
    #: who the sender is in the tenant (their messages' ``submitted_by``, who may answer
    #: their turns' requests); by default ``{bridge}.{user}``
    subject: str | None = Field(default=None, pattern=SUBJECT_PATTERN.pattern)
    role: Literal["admin", "member"] = "member"
    agent: str = Field(min_length=1, max_length=128, pattern=NO_NUL)
    #: the generic bridge's reply URL (its signed webhook); Slack's replies go to its API
    reply_url: str | None = Field(
        default=None, json_schema_extra={"pattern": r"^https?://\S+$", "maxLength": 2048}
    )

    @field_validator("reply_url")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        return None if value is None else webhooks.check_url(value)

    @model_validator(mode="after")
    def _reply_url_for_generic(self) -> BindingRequest:
        if (self.bridge == GENERIC) != (self.reply_url is not None):
            raise ValueError("reply_url is required for the generic bridge, and only there")
        if self.subject is None and not SUBJECT_PATTERN.fullmatch(self.default_subject):
            raise ValueError("the user id makes no subject: name one")
        return self

    @property
    def default_subject(self) -> str:
        return f"{self.bridge}.{self.user}"


def _admin(principal: Principal) -> None:
    # a binding speaks for a subject of the tenant, with a role: an admin's to grant
    if principal.role != TenantRole.ADMIN:
        raise AdminOnly("only an admin may manage bindings")


def binding_json(record: BindingRecord) -> dict[str, Any]:
    return {
        "binding_id": record.binding_id,
        "bridge": record.bridge,
        "workspace": record.workspace,
        "channel": record.channel,
        "user": record.user_id,
        "subject": record.subject,
        "role": record.role,
        "agent": record.agent,
        "reply_url": record.reply_url,
        "created_by": record.created_by,
        "created_at": record.created_at.isoformat(),
        "revoked_at": None if record.revoked_at is None else record.revoked_at.isoformat(),
    }


def create(services: ApiResources, principal: Principal, body: BindingRequest) -> dict[str, Any]:
    """A new live binding; ``WorkspaceNotFound`` (404) for a workspace the operator
    did not assign to this tenant (another tenant's looks like none),
    ``BindingTaken`` (409) when that sender has one already, ``UnknownAgent`` (422)
    for an agent the API does not declare."""
    _admin(principal)
    if tenant_of(services.settings, body.bridge, body.workspace) != principal.tenant:
        raise WorkspaceNotFound(f"{body.bridge} workspace not assigned to this tenant")
    agent = services.registry.get(body.agent)
    record = services.store.bridges.create_binding(
        principal.tenant,
        Sender(body.bridge, body.workspace, body.channel, body.user),
        subject=body.subject or body.default_subject,
        role=body.role,
        agent=agent.name,
        created_by=principal.subject,
        reply_url=body.reply_url,
    )
    return binding_json(record)


def listing(services: ApiResources, principal: Principal) -> dict[str, Any]:
    _admin(principal)
    return {
        "bindings": [
            binding_json(b) for b in services.store.bridges.list_bindings(principal.tenant)
        ]
    }


def revoke(services: ApiResources, principal: Principal, binding_id: str) -> dict[str, Any]:
    """Revoke a live binding (``NotFound`` for none, or one revoked already)."""
    _admin(principal)
    return binding_json(services.store.bridges.revoke_binding(principal.tenant, binding_id))
