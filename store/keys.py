"""Every Redis key and channel turnkeep uses, in one place.

Key layout (all under the ``turnkeep:`` prefix):

``turnkeep:lease:{tenant}:{session}``  string "OWNER FENCE" with a PX TTL: who may step
                                       the session now, and under which fence token.
``turnkeep:fence``                     integer: the last fence token handed out, for
                                       all sessions. Only goes up while Redis keeps it;
                                       after a restart or FLUSHALL the grant script floors
                                       it to the highest fence Postgres accepted.
``turnkeep:rerun:{tenant}:{session}``   "1" with a PX TTL: a delivery found the lease busy;
                                       the holder's release consumes it and enqueues
                                       the session once more.
``turnkeep:secret:{tenant}:{session}:{turn}:{request}``
                                       JSON with a PX TTL: the answer to an
                                       external_auth request, for the tool's next run;
                                       never in Postgres (the journal keeps its hash).
``turnkeep:events:{tenant}:{session}`` pub/sub channel: committed events (after commit)
                                       and live model text deltas (never persisted).

Tenant and session ids are restricted by the API to ``[A-Za-z0-9._-]``, so ``:``
cannot make two keys collide.
"""

from __future__ import annotations

PREFIX = "turnkeep"
FENCE_COUNTER = f"{PREFIX}:fence"


def lease_key(tenant_id: str, session_id: str) -> str:
    return f"{PREFIX}:lease:{tenant_id}:{session_id}"


def rerun_key(tenant_id: str, session_id: str) -> str:
    return f"{PREFIX}:rerun:{tenant_id}:{session_id}"


def secret_key(tenant_id: str, session_id: str, turn_id: str, request_id: str) -> str:
    return f"{PREFIX}:secret:{tenant_id}:{session_id}:{turn_id}:{request_id}"


def events_channel(tenant_id: str, session_id: str) -> str:
    return f"{PREFIX}:events:{tenant_id}:{session_id}"
