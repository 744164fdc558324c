"""Whether a running turn waits for its provider rate limit's slot: its session's pace
mark in Redis (store/pacer.py), read for a running turn's JSON (``paced``) and never
written here. A turn whose call waits holds no worker and no lease meanwhile
(docs/flow-control.md)."""

from __future__ import annotations

from datetime import UTC, datetime

import redis

from turnkeep.api.resources import ApiResources
from turnkeep.models import Paced
from turnkeep.runtime.states import TurnState
from turnkeep.store.pacer import read_mark
from turnkeep.store.records import TurnRecord


def paced(services: ApiResources, turn: TurnRecord) -> Paced | None:
    """When and why the turn's call waits for its slot (one Redis read, made only for a
    running turn), else None."""
    if turn.state is not TurnState.RUNNING:
        return None
    try:
        mark = read_mark(services.redis, turn.tenant_id, turn.session_id)
    except redis.RedisError:
        return None  # a read does not fail for want of an annotation
    if mark is None or mark.turn_id != turn.turn_id:
        return None
    if datetime.fromisoformat(mark.until) <= datetime.now(UTC):
        return None  # its time came: a worker takes it up
    return Paced(
        until=datetime.fromisoformat(mark.until),
        limit=mark.limit,
        reason=mark.reason,
        step=mark.step,
    )
