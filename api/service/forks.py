"""Forks: a new session whose journal is a source's up to a seq (api/http/forks.py
says what a fork is and answers; store/forks.py how it is written)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from turnkeep.api.auth import Principal
from turnkeep.api.resources import ApiResources
from turnkeep.api.service import ids
from turnkeep.api.service.access import may_write, visible
from turnkeep.api.service.requests import ID_REGEX
from turnkeep.runtime.obs.faults import FaultPoint, hit
from turnkeep.store.records import Forked


class ForkRequest(BaseModel):
    """``POST /v1/sessions/{sid}/fork``."""

    model_config = ConfigDict(extra="forbid")

    #: the last seq of the source the fork keeps
    at_seq: int = Field(strict=True, ge=1, le=2**63 - 1)
    #: the new session's id (else the Idempotency-Key, else a new one)
    session_id: str | None = Field(default=None, pattern=ID_REGEX)


def fork(
    services: ApiResources, principal: Principal, sid: str, key: str | None, body: ForkRequest
) -> Forked:
    """Fork ``sid`` at ``body.at_seq`` (blocking): one transaction."""
    may_write(principal)
    new_id = ids.new_id(key, body.session_id, "body.session_id")
    visible(services, principal, sid)
    hit(FaultPoint.BEFORE_FORK)
    # refused: ForkPointPruned (410), ForkPointAhead or SessionExists (409)
    forked = services.store.forks.fork(
        principal.tenant,
        sid,
        new_id,
        at_seq=body.at_seq,
        # a new session: the tenant's TTL unless its source has its own (docs/erasure.md)
        default_ttl=services.settings.erasure.session_ttl_for(principal.tenant),
    )
    hit(FaultPoint.AFTER_FORK)
    return forked
