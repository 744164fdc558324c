"""Agents and their versions, for operators steering a deploy (docs/deploy.md):
what the API's agents module declares and which version the caller's tenant's new
turns get, per definition hash the caller's tenant's active turns and the live
workers serving it (store/fleet.py), an explicit upgrade of one turn or of every turn
on a definition, and whether a turn is held."""

from __future__ import annotations

import threading
import time
from typing import Any

import redis

from turnkeep.api.auth import Principal
from turnkeep.api.errors import AdminOnly
from turnkeep.api.resources import ApiResources
from turnkeep.api.service.access import visible
from turnkeep.api.service.defaults import agent_for, defaults_for
from turnkeep.models import Held
from turnkeep.runtime.agents.definition import AgentDefinition
from turnkeep.runtime.tokens import TenantRole
from turnkeep.store.errors import NotFound, TurnNotActive
from turnkeep.store.fleet import Fleet, WorkerAd
from turnkeep.store.records import TurnRecord

#: ``held``'s reason: no live worker serves the turn's definition
DEFINITION_UNAVAILABLE = "definition_unavailable"


def agents(services: ApiResources, principal: Principal) -> dict[str, Any]:
    """``GET /v1/agents``: the declared agents, each version oldest first, and each
    one's default for the caller's tenant (one read of its promotions)."""
    registry = services.registry
    defaults = defaults_for(services, principal.tenant)
    out = []
    for name in registry.names():
        versions = registry.versions(name)
        latest, default = versions[-1], defaults[name]
        out.append(
            {
                "name": name,
                "latest": _ref(latest),
                "default": _ref(default),
                "gated": registry.policy(name) is not None,
                "versions": [
                    {
                        **_ref(v),
                        "latest": v is latest,
                        "default": v is default,
                        "on_deploy": v.on_deploy.value,
                    }
                    for v in versions
                ],
            }
        )
    return {"agents": out}


def _ref(agent: AgentDefinition) -> dict[str, str]:
    return {"version": agent.version, "definition_hash": agent.definition_hash}


def versions(services: ApiResources, principal: Principal, name: str) -> dict[str, Any]:
    """``GET /v1/agents/{name}/versions``: every definition of ``name`` that is
    declared here, has active turns of the caller's tenant, or a live worker serves."""
    registry = services.registry
    declared = registry.versions(name)
    latest = declared[-1] if declared else None
    turns = services.store.upgrades.turns_by_definition(principal.tenant, name)
    ads = [ad for ad in Fleet(services.redis).live() if name in ad.names]
    served = {h: v for ad in ads for h, v in ad.serves(name).items()}
    order = [a.definition_hash for a in declared]
    order += sorted(set(turns) - set(order))
    order += sorted(set(served) - set(order))
    if not order:
        raise NotFound(f"no agent named {name!r}")
    default = agent_for(services, principal.tenant, name) if declared else None
    out = []
    for h in order:
        agent = registry.by_hash(h)
        out.append(
            {
                "definition_hash": h,
                # a definition this API does not declare: as the workers serving it say
                "version": agent.version if agent is not None else served.get(h),
                "declared": agent is not None,
                "latest": latest is not None and latest.definition_hash == h,
                "default": default is not None and default.definition_hash == h,
                "turns": turns.get(h, {}),
                "workers": [_worker(ad) for ad in ads if h in ad.serves(name)],
            }
        )
    return {"name": name, "versions": out}


def _worker(ad: WorkerAd) -> dict[str, Any]:
    return {"worker": ad.worker, "host": ad.host, "seen_at": ad.seen_at}


def _may_upgrade(principal: Principal) -> None:
    if principal.role != TenantRole.ADMIN:
        raise AdminOnly("only an admin may upgrade turns")


def upgrade_turn(
    services: ApiResources, principal: Principal, sid: str, tid: str
) -> dict[str, Any]:
    """Flag one active turn to move to its agent's newest version, then enqueue its
    session (a held or parked turn is started, and moved, by the next worker)."""
    _may_upgrade(principal)
    visible(services, principal, sid, missing="turn not found")
    if services.store.upgrades.request_upgrade(principal.tenant, sid, tid) is None:
        turn = services.store.reads.get_turn(principal.tenant, sid, tid)  # NotFound if none
        raise TurnNotActive(f"turn is {turn.state.value}")
    services.producer.enqueue(principal.tenant, sid)
    return {"turn_id": tid, "upgrade_requested": True}


def upgrade_version(
    services: ApiResources, principal: Principal, name: str, definition_hash: str
) -> dict[str, Any]:
    """Flag every active turn of the caller's tenant on one definition of ``name``."""
    _may_upgrade(principal)
    sessions = services.store.upgrades.request_upgrades(principal.tenant, name, definition_hash)
    for sid in dict.fromkeys(sessions):
        services.producer.enqueue(principal.tenant, sid)
    return {"requested": len(sessions)}


#: seconds one reading of the live workers' definitions serves ``held``: a client
#: polling its running turn costs Redis nothing more than one read a second per process
SERVED_TTL = 1.0
#: by the services object (one per app: two apps of one process may see two Redis)
_served: dict[int, tuple[float, set[str]]] = {}
_served_lock = threading.Lock()


def _served_hashes(services: ApiResources) -> set[str]:
    now, key = time.monotonic(), id(services)
    with _served_lock:
        seen = _served.get(key)
    if seen is not None and now - seen[0] < SERVED_TTL:
        return seen[1]
    hashes, _ = Fleet(services.redis).served()
    with _served_lock:
        _served[key] = (now, hashes)
    return hashes


def held(services: ApiResources, turn: TurnRecord) -> Held | None:
    """Why a runnable turn does not run, when no live worker serves its definition
    (made only for a runnable turn; the workers' definitions read at most once a
    second)."""
    if not turn.runnable:
        return None
    try:
        hashes = _served_hashes(services)
    except redis.RedisError:
        return None  # a read does not fail for want of an annotation
    if turn.agent_hash in hashes:
        return None
    return Held(reason=DEFINITION_UNAVAILABLE, definition_hash=turn.agent_hash)
