"""Sessions held back by a ``max_running`` limit, until a slot frees (Redis).

A slot is a ``running`` turn row in Postgres: the start statement counts them under
the tenant's lock and refuses a start past the limit (store/max_running.py). A session
refused so is held here, in the set of the scope that refused it, and its delivery
ends: it stays queued, never failed, and holds no worker nor lease. The worker whose
limited turn leaves ``running`` (settled, parked on a wait) wakes one held session of
each of the turn's scopes (``wake``): it is sent again, so it starts as soon as a slot
is free, without anyone polling. A worker killed while it runs a turn keeps that
turn ``running``, so its slot stays counted until the recovery scan's delivery takes
the turn over and ends it: the slot is never lost, and the limit never overrun.

The recovery scan leaves held sessions alone (sending them would only be refused
again, a storm with a large backlog) but wakes the oldest of each held set once per
pass: a wake lost with a crash, or in the race of a start refused while the last
slot freed, costs at most one scan interval.

Key layout (store/keys.py): ``P:held:{tenant}`` (the tenant's limit) and
``P:held:{tenant}:agent:{agent}`` (an agent's limit in that tenant), sorted sets of
session ids scored by the time they were first held; ``P:held`` the set of scopes
with held sessions (``tenant`` or ``tenant\\x1fagent``), for the scan.

HOLD  KEYS[1] the scope's set, KEYS[2] the index; ARGV session, score, scope.
      ZADD NX, and the scope into the index.
WAKE  KEYS[1] the scope's set, KEYS[2] the index; ARGV scope. ZPOPMIN; the scope
      leaves the index once its set is empty. Returns the session or nil.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import cast

import redis

from store import keys

HOLD = """
redis.call('ZADD', KEYS[1], 'NX', ARGV[2], ARGV[1])
redis.call('SADD', KEYS[2], ARGV[3])
return 1
"""

WAKE = """
local got = redis.call('ZPOPMIN', KEYS[1])
if redis.call('EXISTS', KEYS[1]) == 0 then redis.call('SREM', KEYS[2], ARGV[1]) end
if got[1] then return got[1] end
return false
"""

_SEP = "\x1f"


@dataclass(frozen=True)
class Scope:
    """What a limit counts: a tenant's running turns, or an agent's in a tenant."""

    tenant_id: str
    agent: str | None = None

    @property
    def key(self) -> str:
        return keys.held_key(self.tenant_id, self.agent)

    @property
    def member(self) -> str:
        return self.tenant_id if self.agent is None else f"{self.tenant_id}{_SEP}{self.agent}"

    @classmethod
    def parse(cls, member: str) -> Scope:
        tenant, _, agent = member.partition(_SEP)
        return cls(tenant, agent or None)


class HeldSessions:
    """The held sets on the deployment's Redis."""

    def __init__(self, client: redis.Redis) -> None:
        self.redis = client
        self._hold = client.register_script(HOLD)
        self._wake = client.register_script(WAKE)

    def hold(self, scope: Scope, session_id: str) -> None:
        self._hold(
            keys=[scope.key, keys.held_index_key()],
            args=[session_id, int(time.time() * 1000), scope.member],
        )

    def wake(self, scope: Scope) -> str | None:
        """The oldest session held in ``scope``, taken out of it; None when none is."""
        got = self._wake(keys=[scope.key, keys.held_index_key()], args=[scope.member])
        return None if not got else cast(bytes, got).decode()

    def scopes(self) -> list[Scope]:
        """Every scope with held sessions."""
        members = cast(set[bytes], self.redis.smembers(keys.held_index_key()))
        return sorted((Scope.parse(m.decode()) for m in members), key=lambda s: s.member)

    def oldest(self, scope: Scope) -> str | None:
        """The session held longest in ``scope``, left in it (the scan's wake)."""
        got = cast(list[bytes], self.redis.zrange(scope.key, 0, 0))
        return got[0].decode() if got else None

    def among(self, sessions: list[tuple[str, str]]) -> list[bool]:
        """Whether each (tenant, session) is held in a scope of its tenant (two round
        trips: the scopes, then one pipeline)."""
        by_tenant: dict[str, list[Scope]] = {}
        for scope in self.scopes():
            by_tenant.setdefault(scope.tenant_id, []).append(scope)
        if not by_tenant:
            return [False] * len(sessions)
        pipe = self.redis.pipeline(transaction=False)
        counts = []
        for tenant, session in sessions:
            scopes = by_tenant.get(tenant, [])
            counts.append(len(scopes))
            for scope in scopes:
                pipe.zscore(scope.key, session)
        scores = iter(pipe.execute())
        return [any([next(scores) is not None for _ in range(n)]) for n in counts]

    def held(self, scope: Scope) -> set[str]:
        """The sessions held in ``scope`` (a membership read for the scan and tests)."""
        return {m.decode() for m in cast(list[bytes], self.redis.zrange(scope.key, 0, -1))}
