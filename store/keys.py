"""Every Redis key and channel turnkeep uses, in one place.

Key layout, under the process's prefix ``P`` (``TURNKEEP_REDIS_PREFIX``, default
``turnkeep``; shown here with the default):

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
``turnkeep:worker:{owner}``            JSON with a PX TTL: a live worker process and the
                                       agent definitions it serves (store/fleet.py).
``turnkeep:workers``                   set: the owners that advertised; members whose key
                                       expired are dropped by the next reader.
``turnkeep:refused:{turn}``            "1" with a TTL: a chat bridge's unbound sender was
                                       told so for this message (the turn id it would
                                       have had): a provider's retry is not told again.
``turnkeep:pace:{bucket}``              hash with a PX TTL: one declared rate limit's shared
                                       bucket for one endpoint and key (runtime/ratelimits.py
                                       ``bucket_id``, a digest: never the key): ``r`` and ``t``
                                       the next free times of its requests and tokens, ``b``
                                       a wait the provider asked for (store/pacer.py).
``turnkeep:paced:{tenant}:{session}``  JSON with a PX TTL (the wait and a lease TTL): the
                                       session's head turn waits for its rate limit's slot
                                       (turn, step, until, limit, reason); the recovery scan
                                       leaves the session alone meanwhile.
``turnkeep:paced``                     sorted set: ``{tenant}:{session}`` scored by the
                                       pace's end (ms), the turns paced now (a gauge).
``turnkeep:fair:{queue}:tenants``     list: the tenants with sessions ready for a Celery
                                       queue's tickets, in any band, each once, in
                                       rotation (store/fair.py).
``turnkeep:fair:{queue}:rotating``    set: the same tenants (membership without a walk).
``turnkeep:fair:{queue}:ring:{band}``  list: a ring per band of the version before, only
                                       drained (store/fair.py).
``turnkeep:fair:{queue}:ready:{band}:{tenant}``
                                       sorted set: the tenant's sessions waiting for a
                                       ticket in that band, by when they were added.
``turnkeep:held:{tenant}``             sorted set: sessions a start refused at the
``turnkeep:held:{tenant}:agent:{name}`` tenant's (or its agent's) max_running, waiting
                                       for a slot (store/held.py).
``turnkeep:held``                      set: the scopes with held sessions, for the scan.
``turnkeep:events:{tenant}:{session}`` pub/sub channel: committed events (after commit)
                                       and live model text deltas (never persisted).

Celery's own broker keys on a Redis broker (the queue lists, ``unacked``,
``_kombu.binding.*``, the event channels) are kombu's: with the default prefix they
keep their unprefixed names (a deployment's queued messages are where an upgrade
looks for them); any other prefix puts them under ``P:celery:`` (``broker_keyprefix``,
kombu's ``global_keyprefix``), so two deployments or test runs sharing one Redis
database never touch each other's.
On RabbitMQ (store/brokers.py) the messages are the broker's; every key above stays
in Redis.

The prefix is process-wide, read from ``get_settings()`` when a key is built: every
process (API, worker, beat, CLI) of one deployment must run with the same one.
Tenant and session ids are restricted by the API to ``[A-Za-z0-9._-]``, so ``:``
cannot make two keys collide; the prefix is restricted likewise (runtime/settings.py).
"""

from __future__ import annotations

from turnkeep.runtime.names import REDIS_PREFIX
from turnkeep.runtime.settings import get_settings


def prefix() -> str:
    """The process's namespace (``TURNKEEP_REDIS_PREFIX``)."""
    return get_settings().redis.prefix


def broker_keyprefix(redis_prefix: str) -> str:
    """What kombu prepends to every key of its Redis transport under ``redis_prefix``:
    nothing for the default (the names deployments have always had)."""
    return "" if redis_prefix == REDIS_PREFIX else f"{redis_prefix}:celery:"


def fence_key() -> str:
    return f"{prefix()}:fence"


def lease_key(tenant_id: str, session_id: str) -> str:
    return f"{prefix()}:lease:{tenant_id}:{session_id}"


def rerun_key(tenant_id: str, session_id: str) -> str:
    return f"{prefix()}:rerun:{tenant_id}:{session_id}"


def secret_key(tenant_id: str, session_id: str, turn_id: str, request_id: str) -> str:
    return f"{prefix()}:secret:{tenant_id}:{session_id}:{turn_id}:{request_id}"


def worker_key(owner: str) -> str:
    return f"{prefix()}:worker:{owner}"


def workers_key() -> str:
    return f"{prefix()}:workers"


def events_channel(tenant_id: str, session_id: str) -> str:
    return f"{prefix()}:events:{tenant_id}:{session_id}"


def refused_key(turn_id: str) -> str:
    return f"{prefix()}:refused:{turn_id}"


def pace_key(bucket: str) -> str:
    return f"{prefix()}:pace:{bucket}"


def paced_key(tenant_id: str, session_id: str) -> str:
    return f"{prefix()}:paced:{tenant_id}:{session_id}"


def paced_index_key() -> str:
    return f"{prefix()}:paced"


def fair_ring_key(queue: str) -> str:
    return f"{prefix()}:fair:{queue}:tenants"


def fair_rotating_key(queue: str) -> str:
    return f"{prefix()}:fair:{queue}:rotating"


def fair_legacy_ring_key(queue: str, band: int) -> str:
    """A ring per band, of the version before (store/fair.py drains it)."""
    return f"{prefix()}:fair:{queue}:ring:{band}"


def fair_ready_prefix(queue: str) -> str:
    return f"{prefix()}:fair:{queue}:ready:"


def fair_ready_key(queue: str, band: int, tenant_id: str) -> str:
    return f"{fair_ready_prefix(queue)}{band}:{tenant_id}"


def held_key(tenant_id: str, agent: str | None = None) -> str:
    base = f"{prefix()}:held:{tenant_id}"
    return base if agent is None else f"{base}:agent:{agent}"


def held_index_key() -> str:
    return f"{prefix()}:held"
