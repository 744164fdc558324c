"""A tenant's max_running, declared by its admin (docs/flow-control.md): at most this
many of its turns running at once; the rest stay queued and start as slots free.
Workers read the declared limits every few seconds (worker/max_running.py), so a
lower limit takes effect within that long; a higher one, or none, at once: the
sessions held at the old limit that it now lets run are woken as it is declared, and
the limited start counts against the limit as stored, not the worker's reading."""

from __future__ import annotations

import logging
from typing import Any

import redis
from pydantic import BaseModel, ConfigDict, Field

from turnkeep.api.auth import Principal
from turnkeep.api.errors import AdminOnly
from turnkeep.api.resources import ApiResources
from turnkeep.runtime.tokens import TenantRole
from turnkeep.store.errors import Unavailable
from turnkeep.store.held import HeldSessions, Scope
from turnkeep.store.max_running import TenantLimits

log = logging.getLogger(__name__)

#: the largest max_running a tenant may declare (a bound, not a recommendation)
MAX_RUNNING = 100_000
#: the most held sessions a raised limit wakes itself; each start that leaves a slot
#: wakes the next (worker/lane.py), so the rest follow without waiting for the scan
RAISE_WAKES = 32


class LimitsRequest(BaseModel):
    """``PUT /v1/limits``: the tenant's max_running; null clears it (the deployment's
    ``TURNKEEP_MAX_RUNNING_PER_TENANT`` then applies, if set)."""

    model_config = ConfigDict(extra="forbid")

    max_running: int | None = Field(ge=1, le=MAX_RUNNING)


def limits_json(
    services: ApiResources, principal: Principal, record: TenantLimits | None
) -> dict[str, Any]:
    return {
        "max_running": None if record is None else record.max_running,
        "effective_max_running": effective(services, record),
        "updated_by": None if record is None else record.updated_by,
        "updated_at": None if record is None else record.updated_at.isoformat(),
        # what the console offers a form for; the PUT checks the role again
        "may_declare": may_declare(principal),
    }


def may_declare(principal: Principal) -> bool:
    """Whether ``principal`` may declare its tenant's limits: a tenant's admin."""
    return principal.role == TenantRole.ADMIN


def get(services: ApiResources, principal: Principal) -> dict[str, Any]:
    """The caller's tenant's limits (any role may read them)."""
    return limits_json(services, principal, services.store.max_running.get_limits(principal.tenant))


def put(services: ApiResources, principal: Principal, body: LimitsRequest) -> dict[str, Any]:
    """Declare (or clear) the tenant's max_running; a tenant's admin only."""
    if not may_declare(principal):
        raise AdminOnly("only an admin may declare the tenant's limits")
    before = effective(services, services.store.max_running.get_limits(principal.tenant))
    record = services.store.max_running.set_limits(
        principal.tenant, max_running=body.max_running, updated_by=principal.subject
    )
    wake_allowed(services, principal.tenant, before, effective(services, record))
    return limits_json(services, principal, record)


def effective(services: ApiResources, record: TenantLimits | None) -> int | None:
    declared = None if record is None else record.max_running
    return services.settings.limits.max_running_per_tenant if declared is None else declared


def wake_allowed(
    services: ApiResources, tenant_id: str, before: int | None, after: int | None
) -> int:
    """Send the sessions held at the tenant's limit ``before`` that ``after`` lets run:
    every one when no limit is left, up to the slots added when it rose. Returns how
    many were sent; a failure leaves them to the recovery scan's wake."""
    scope, held = Scope(tenant_id), HeldSessions(services.redis)
    try:
        if after is None:
            sessions = held.release(scope)
        elif before is not None and after > before:
            sessions = []
            for _ in range(min(after - before, RAISE_WAKES)):
                session = held.wake(scope, services.store.max_running.waiting_heads)
                if session is None:
                    break
                sessions.append(session)
        else:
            return 0
    except (redis.RedisError, Unavailable) as exc:
        log.warning("held sessions not woken for a raised limit (%s)", type(exc).__name__)
        return 0
    for session in sessions:
        services.producer.enqueue(tenant_id, session)
    return len(sessions)
