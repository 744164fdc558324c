"""A tenant's max_running, declared by its admin (docs/flow-control.md): at most this
many of its turns running at once; the rest stay queued and start as slots free.
Workers read the declared limits every few seconds (worker/max_running.py), so a
change takes effect within that long."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from api.auth import Principal
from api.errors import AdminOnly
from api.services import Services
from runtime.tokens import TenantRole
from store.max_running import TenantLimits

#: the largest max_running a tenant may declare (a bound, not a recommendation)
MAX_RUNNING = 100_000


class LimitsRequest(BaseModel):
    """``PUT /v1/limits``: the tenant's max_running; null clears it (the deployment's
    ``TURNKEEP_MAX_RUNNING_PER_TENANT`` then applies, if set)."""

    model_config = ConfigDict(extra="forbid")

    max_running: int | None = Field(ge=1, le=MAX_RUNNING)


def limits_json(
    services: Services, principal: Principal, record: TenantLimits | None
) -> dict[str, Any]:
    declared = None if record is None else record.max_running
    default = services.settings.max_running_per_tenant
    return {
        "max_running": declared,
        "effective_max_running": default if declared is None else declared,
        "updated_by": None if record is None else record.updated_by,
        "updated_at": None if record is None else record.updated_at.isoformat(),
        # what the console offers a form for; the PUT checks the role again
        "may_declare": may_declare(principal),
    }


def may_declare(principal: Principal) -> bool:
    """Whether ``principal`` may declare its tenant's limits: a tenant's admin."""
    return principal.role == TenantRole.ADMIN


def get(services: Services, principal: Principal) -> dict[str, Any]:
    """The caller's tenant's limits (any role may read them)."""
    return limits_json(services, principal, services.store.get_limits(principal.tenant))


def put(services: Services, principal: Principal, body: LimitsRequest) -> dict[str, Any]:
    """Declare (or clear) the tenant's max_running; a tenant's admin only."""
    if not may_declare(principal):
        raise AdminOnly("only an admin may declare the tenant's limits")
    record = services.store.set_limits(
        principal.tenant, max_running=body.max_running, updated_by=principal.subject
    )
    return limits_json(services, principal, record)
