"""Projects: a tenant's sessions grouped under one owner, and the overrides of agents
their turns run with (the override logic itself is runtime/projects.py).

A project belongs to the tenant and the subject whose token created it (its owner,
which never changes). Nobody else sees it or anything in it: another subject of the
tenant, whatever its role (admins included), and another tenant get what a missing
project or session gets, byte for byte (404 ``not_found``). The owner is read from
the project's row on every request that reaches one of its sessions
(api/service/access.py ``visible``), not remembered from a token.

A session's project is set by its first turn (``TurnRequest.project``) and never
changes: a later turn naming another project, or none for a project's session, is
409 ``project_mismatch`` (``ProjectMismatch``) for the owner, and 404 for anyone else.
At admission the project's override for the turn's agent is pinned in the turn's
input and covered by its input hash (api/service/admission.py, runtime/admission.py).

``overrides`` is validated when it is written: only declared agents, only
``instructions`` (1 to ``MAX_INSTRUCTIONS`` characters) and the ``Limits`` fields,
each positive and at most the agent's own limit (an override may only lower one);
else 422 ``validation_error`` with ``errors[].loc`` under ``body.overrides``.
``PATCH`` replaces the whole document; turns admitted before keep what they pinned.

Creation is idempotent by the project's id: the body's ``project_id``, else the
``Idempotency-Key`` header, else a new one (both given: they must be equal). The same
request again answers the project as it stands (200); another request for a taken id
(other overrides, or another subject's project of that id) is 409
``idempotency_conflict``. Project ids share one namespace per tenant.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from turnkeep.api.auth import Principal

# ProjectMismatch: raised at admission (api/service/admission.py), named here as before
from turnkeep.api.errors import ProjectMismatch as ProjectMismatch
from turnkeep.api.errors import RequestInvalid
from turnkeep.api.resources import ApiResources
from turnkeep.api.service import pages
from turnkeep.api.service.access import may_write
from turnkeep.api.service.ids import new_id
from turnkeep.api.service.requests import ID_REGEX, NO_NUL, PositiveInt, PositiveSeconds
from turnkeep.runtime import projects
from turnkeep.runtime.hashing import sha256_hex
from turnkeep.store.errors import IdempotencyConflict, NotFound
from turnkeep.store.records import ProjectRecord

#: an agent's name as a key of ``overrides.agents``
AgentName = Annotated[str, Field(min_length=1, max_length=128, pattern=NO_NUL)]


class LimitsOverride(BaseModel):
    """Bounds of the agent's turns in the project; each may only lower the agent's own."""

    model_config = ConfigDict(extra="forbid")

    max_iterations: PositiveInt | None = None
    max_model_calls: PositiveInt | None = None
    max_tool_calls: PositiveInt | None = None
    max_tokens: PositiveInt | None = None
    max_seconds: PositiveSeconds | None = None


class AgentOverride(BaseModel):
    """What the project changes of one agent: its instructions (replaced), its limits
    (lowered). Both optional."""

    model_config = ConfigDict(extra="forbid")

    instructions: str | None = Field(
        default=None, min_length=1, max_length=projects.MAX_INSTRUCTIONS, pattern=NO_NUL
    )
    limits: LimitsOverride | None = None


class Overrides(BaseModel):
    """A project's overrides, by agent name (declared agents only)."""

    model_config = ConfigDict(extra="forbid")

    agents: dict[AgentName, AgentOverride] = Field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The stored form: unset fields dropped."""
        return self.model_dump(exclude_none=True)


class ProjectCreate(BaseModel):
    """``POST /v1/projects``."""

    model_config = ConfigDict(extra="forbid")

    #: the project's id (else the Idempotency-Key, else a new one)
    project_id: str | None = Field(default=None, pattern=ID_REGEX)
    overrides: Overrides = Field(default_factory=Overrides)


class ProjectUpdate(BaseModel):
    """``PATCH /v1/projects/{pid}``: the new overrides, replacing the old ones."""

    model_config = ConfigDict(extra="forbid")

    overrides: Overrides


def _checked(services: ApiResources, overrides: Overrides) -> dict[str, Any]:
    """The stored form of ``overrides``, or ``RequestInvalid`` at the first thing it
    asks for that it may not (runtime/projects.check)."""
    registry = services.registry
    stored = overrides.to_json()
    agents = {name: registry.get(name) for name in registry.names()}
    for where, message in projects.check(stored, agents):
        raise RequestInvalid(f"body.overrides.{where}", message)
    return stored


@dataclass(frozen=True)
class Created:
    project: ProjectRecord
    #: False: a replay, answered with the project as it stands
    created: bool


def create(
    services: ApiResources, principal: Principal, key: str | None, body: ProjectCreate
) -> Created:
    """Create a project owned by the principal's subject (blocking): one statement, one
    more to tell a replay from a conflict."""
    may_write(principal)
    pid = new_id(key, body.project_id, "body.project_id")
    overrides = _checked(services, body.overrides)
    digest = sha256_hex(overrides)
    store, tenant = services.store, principal.tenant
    made = store.projects.create_project(
        tenant, pid, owner=principal.subject, overrides=overrides, request_hash=digest
    )
    if made is not None:
        return Created(made, created=True)
    try:
        existing = store.projects.get_project(tenant, pid, owner=principal.subject)
    except NotFound:
        # another subject's project of that id: a conflict like any other, no more said
        raise IdempotencyConflict(f"project {pid!r} exists") from None
    if existing.request_hash != digest:
        raise IdempotencyConflict(f"project {pid!r} was created with other overrides")
    return Created(existing, created=False)


def read(services: ApiResources, principal: Principal, pid: str) -> ProjectRecord:
    """The principal's project; ``NotFound`` for none and for anyone else's."""
    return services.store.projects.get_project(principal.tenant, pid, owner=principal.subject)


def update(
    services: ApiResources, principal: Principal, pid: str, body: ProjectUpdate
) -> ProjectRecord:
    """Replace the overrides of the principal's project (``NotFound`` for anyone else's):
    turns admitted from now on pin the new ones."""
    may_write(principal)
    overrides = _checked(services, body.overrides)
    return services.store.projects.update_project(
        principal.tenant, pid, owner=principal.subject, overrides=overrides
    )


# -- the owner's listing ------------------------------------------------------------------


def cursor(project: ProjectRecord) -> str:
    return pages.cursor(project.created_at, project.project_id)


def page(
    services: ApiResources, principal: Principal, before: str | None, limit: int
) -> dict[str, Any]:
    """A keyset page of the principal's projects, newest first."""
    rows = services.store.projects.list_projects(
        principal.tenant,
        owner=principal.subject,
        limit=limit,
        before=None if before is None else pages.position(before),
    )
    return {
        "projects": [project_json(p) for p in rows],
        "next": cursor(rows[-1]) if len(rows) == limit else None,
    }


def project_json(project: ProjectRecord) -> dict[str, Any]:
    return {
        "project_id": project.project_id,
        "owner": project.owner,
        "overrides": project.overrides,
        "created_at": project.created_at.isoformat(),
        "updated_at": project.updated_at.isoformat(),
    }


# -- admission ----------------------------------------------------------------------------


def pin(
    services: ApiResources, principal: Principal, project_id: str, agent_name: str
) -> dict[str, Any]:
    """What a turn of ``agent_name`` admitted into the principal's project pins in its
    input (runtime/projects.pinned): the project's override of the agent as it is now.
    ``NotFound`` for a project that is not the principal's."""
    project = read(services, principal, project_id)
    return projects.pinned(project.project_id, projects.override_for(project.overrides, agent_name))
