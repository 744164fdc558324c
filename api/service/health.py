"""Readiness: whether this API process reaches Postgres and Redis (``GET /readyz``,
api/http/health.py). Blocking: each check is one round trip."""

from __future__ import annotations

import logging

from turnkeep.api.resources import ApiResources

log = logging.getLogger(__name__)


def _check_postgres(services: ApiResources) -> str:
    try:
        services.store.ping()
    except Exception as exc:
        log.warning("readiness: postgres failed: %s", type(exc).__name__)
        return "failed"
    return "ok"


def _check_redis(services: ApiResources) -> str:
    try:
        services.redis.ping()
    except Exception as exc:
        log.warning("readiness: redis failed: %s", type(exc).__name__)
        return "failed"
    return "ok"


def checks(services: ApiResources) -> dict[str, str]:
    """``ok`` or ``failed`` for each of ``postgres`` and ``redis``."""
    return {"postgres": _check_postgres(services), "redis": _check_redis(services)}
