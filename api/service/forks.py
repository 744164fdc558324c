"""Forks: a new session whose journal is a source's up to a seq (api/http/forks.py
says what a fork is and answers; store/forks.py how it is written)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from api.auth import Principal
from api.problems import Problem
from api.schemas import ID_REGEX
from api.service import ids
from api.service.access import may_write, visible
from api.services import Services
from runtime.faults import FaultPoint, hit
from store.forks import ForkPointAhead, ForkPointPruned, SessionExists
from store.records import Forked


class ForkRequest(BaseModel):
    """``POST /v1/sessions/{sid}/fork``."""

    model_config = ConfigDict(extra="forbid")

    #: the last seq of the source the fork keeps
    at_seq: int = Field(strict=True, ge=1, le=2**63 - 1)
    #: the new session's id (else the Idempotency-Key, else a new one)
    session_id: str | None = Field(default=None, pattern=ID_REGEX)


def fork(
    services: Services, principal: Principal, sid: str, key: str | None, body: ForkRequest
) -> Forked:
    """Fork ``sid`` at ``body.at_seq`` (blocking): one transaction."""
    may_write(principal)
    new_id = ids.new_id(key, body.session_id, "body.session_id")
    visible(services, principal, sid)
    hit(FaultPoint.BEFORE_FORK)
    try:
        forked = services.store.fork(principal.tenant, sid, new_id, at_seq=body.at_seq)
    except ForkPointPruned as exc:
        raise Problem(
            410,
            "fork_point_pruned",
            f"seq {exc.requested} is before the earliest retained seq {exc.earliest}",
            extra={"requested": exc.requested, "earliest": exc.earliest, "latest": exc.latest},
        ) from None
    except ForkPointAhead as exc:
        raise Problem(
            409,
            "fork_point_ahead",
            f"seq {exc.requested} is beyond the head seq",
            extra={"requested": exc.requested, "head_seq": exc.head},
        ) from None
    except SessionExists:
        raise Problem(
            409, "session_exists", "a session of that id exists and is not this fork"
        ) from None
    hit(FaultPoint.AFTER_FORK)
    return forked
