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

A started session leaves every held set of its tenant, whichever path started it
(``leave``, after a limited start; a cleared limit releases its whole set, ``release``,
api/service/max_running.py), and a wake skips what is no longer waiting: a session
whose head already ran, was cancelled or was erased is taken out of the set as the
wake finds it (``wake`` asks Postgres which of the oldest few still wait), so no such
ghost at the head of a set ever eats a freed slot. A start that leaves room in its
scopes wakes the next (worker/lane.py), so one wake (the scan's, a raised limit's)
fills every free slot at once.

The recovery scan leaves held sessions alone (sending them would only be refused
again, a storm with a large backlog) but wakes the oldest still waiting of each held
set once per pass, and releases the sets of tenants with no limit in force: a wake
lost with a crash, or in the race of a start refused while the last slot freed,
costs at most one scan interval.

Key layout (store/keys.py): ``P:held:{tenant}`` (the tenant's limit) and
``P:held:{tenant}:agent:{agent}`` (an agent's limit in that tenant), sorted sets of
session ids scored by their head turn's admission (ms), so a session refused again
after a wake keeps its place; ``P:held`` the set of scopes with held sessions
(``tenant`` or ``tenant\\x1fagent``), for the scan.

HOLD   KEYS[1] the scope's set, KEYS[2] the index; ARGV session, score, scope.
       ZADD NX, and the scope into the index.
TAKE   KEYS[1] the scope's set, KEYS[2] the index; ARGV scope, the session to take
       ("" for none), then the sessions no longer waiting. ZREM them all; the scope
       leaves the index once its set is empty. Returns 1 when this call took the
       session (a concurrent wake did not take it first).
LEAVE  KEYS[1] the index, KEYS[2..] the scopes' sets; ARGV session, then the scopes'
       index members in KEYS' order. ZREM the session from each; a set left empty
       leaves the index. Returns how many sets held it.
RELEASE KEYS[1] the scope's set, KEYS[2] the index; ARGV scope. The whole set,
       oldest first, deleted, and the scope out of the index.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import cast

import redis

from turnkeep.store import keys

HOLD = """
redis.call('ZADD', KEYS[1], 'NX', ARGV[2], ARGV[1])
redis.call('SADD', KEYS[2], ARGV[3])
return 1
"""

TAKE = """
local taken = 0
if ARGV[2] ~= '' then taken = redis.call('ZREM', KEYS[1], ARGV[2]) end
for i = 3, #ARGV do redis.call('ZREM', KEYS[1], ARGV[i]) end
if redis.call('EXISTS', KEYS[1]) == 0 then redis.call('SREM', KEYS[2], ARGV[1]) end
return taken
"""

LEAVE = """
local n = 0
for i = 2, #KEYS do
  n = n + redis.call('ZREM', KEYS[i], ARGV[1])
  if redis.call('EXISTS', KEYS[i]) == 0 then redis.call('SREM', KEYS[1], ARGV[i]) end
end
return n
"""

RELEASE = """
local all = redis.call('ZRANGE', KEYS[1], 0, -1)
redis.call('DEL', KEYS[1])
redis.call('SREM', KEYS[2], ARGV[1])
return all
"""

#: how many of a set's oldest sessions one wake asks Postgres about
PEEK = 8
#: how many rounds of ``PEEK`` one wake looks through before giving up to the scan
ROUNDS = 4

#: which of a tenant's sessions still wait for a slot (store/max_running.py
#: ``waiting_heads``): their lane head queued, or back from a wait with its answer
Waiting = Callable[[str, list[str]], set[str]]

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
        self._take = client.register_script(TAKE)
        self._leave = client.register_script(LEAVE)
        self._release = client.register_script(RELEASE)

    def hold(self, scope: Scope, session_id: str, since: float | None = None) -> None:
        """Hold ``session_id`` in ``scope``, in the place of ``since`` (its head's
        admission, epoch seconds; default now); held already: it keeps its place."""
        score = int((time.time() if since is None else since) * 1000)
        self._hold(keys=[scope.key, keys.held_index_key()], args=[session_id, score, scope.member])

    def wake(self, scope: Scope, waiting: Waiting) -> str | None:
        """The oldest session held in ``scope`` that still waits for a slot, taken out
        of it; those before it that no longer wait (ghosts) are dropped. None when
        none waits among the first ``PEEK * ROUNDS``."""
        for _ in range(ROUNDS):
            found = [
                m.decode() for m in cast(list[bytes], self.redis.zrange(scope.key, 0, PEEK - 1))
            ]
            if not found:
                return None
            still = waiting(scope.tenant_id, found)
            ghosts = [s for s in found if s not in still]
            for session in [s for s in found if s in still]:
                if self._take(
                    keys=[scope.key, keys.held_index_key()],
                    args=[scope.member, session, *ghosts],
                ):
                    return session
                ghosts = []  # a concurrent wake took it: dropped once is enough
            if ghosts:
                self._take(
                    keys=[scope.key, keys.held_index_key()], args=[scope.member, "", *ghosts]
                )
        return None

    def leave(self, tenant_id: str, session_id: str, agent: str | None) -> None:
        """``session_id`` started: out of its tenant's set and ``agent``'s (one round
        trip)."""
        scopes = [Scope(tenant_id)] + ([] if agent is None else [Scope(tenant_id, agent)])
        self._leave(
            keys=[keys.held_index_key(), *(s.key for s in scopes)],
            args=[session_id, *(s.member for s in scopes)],
        )

    def release(self, scope: Scope) -> list[str]:
        """Every session held in ``scope``, oldest first, taken out of it (its limit is
        gone: they all may start)."""
        got = self._release(keys=[scope.key, keys.held_index_key()], args=[scope.member])
        return [m.decode() for m in cast(list[bytes], got)]

    def scopes(self) -> list[Scope]:
        """Every scope with held sessions."""
        members = cast(set[bytes], self.redis.smembers(keys.held_index_key()))
        return sorted((Scope.parse(m.decode()) for m in members), key=lambda s: s.member)

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
