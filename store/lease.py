"""The per-session Redis lease with monotonic fencing tokens.

Four Lua scripts, each atomic on the Redis server:

GRANT   KEYS[1] lease key, KEYS[2] fence counter; ARGV owner, ttl_ms, floor.
        If the lease key exists: {0, current value}. If the counter is missing (a
        Redis restart or FLUSHALL) and no floor was given (floor -1): {2, ""}, so
        the caller reads the floor from Postgres and asks again; the floor costs a
        Postgres read only then, not on every task. Otherwise the token is
        max(INCR counter, floor + 1), where floor is the highest fence Postgres has
        accepted for the session, so a Redis that lost its counter can never hand
        out a token at or below one already used. Sets "OWNER TOKEN" with PX ttl.
        A busy answer also sets KEYS[3], the session's rerun flag (PX ttl): the
        holder's RELEASE reports it, so a message dropped as "busy" is not lost.
RENEW   KEYS[1] lease key; ARGV value, ttl_ms. PEXPIRE only if the value is ours.
RELEASE KEYS[1] lease key, KEYS[2] rerun flag; ARGV value. DEL only if the value
        is ours; returns {released, rerun}: rerun is 1 when a grant found the lease
        busy since (the holder consumes the flag; nobody else can).

FLOOR   KEYS[1] fence counter; ARGV floor. Raises the counter to floor if it is below.

The lease says who is alive; Postgres (``sessions.fence``) is the authority on
what may be written. A token is only useful once Postgres accepted it (``Store.turns.start``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import redis

from turnkeep.store.keys import fence_key, lease_key, paced_key, rerun_key

#: the floor to pass when the caller has not read Postgres's
UNKNOWN_FLOOR = -1

GRANT = """
local cur = redis.call('GET', KEYS[1])
if cur then
  redis.call('SET', KEYS[3], '1', 'PX', ARGV[2])
  return {0, cur}
end
local floor = tonumber(ARGV[3])
if floor < 0 and redis.call('EXISTS', KEYS[2]) == 0 then return {2, ''} end
local n = redis.call('INCR', KEYS[2])
if n <= floor then
  n = floor + 1
  redis.call('SET', KEYS[2], n)
end
redis.call('SET', KEYS[1], ARGV[1] .. ' ' .. n, 'PX', ARGV[2])
return {1, tostring(n)}
"""

RENEW = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
"""

RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  return {1, redis.call('DEL', KEYS[2])}
end
return {0, 0}
"""


FLOOR = """
local n = tonumber(redis.call('GET', KEYS[1]) or '0')
if n < tonumber(ARGV[1]) then redis.call('SET', KEYS[1], ARGV[1]) end
return 1
"""


@dataclass(frozen=True)
class Lease:
    """A granted lease. ``value`` is what Redis holds; ``fence`` the token."""

    tenant_id: str
    session_id: str
    owner: str
    fence: int

    @property
    def key(self) -> str:
        return lease_key(self.tenant_id, self.session_id)

    @property
    def value(self) -> str:
        return f"{self.owner} {self.fence}"


@dataclass(frozen=True)
class Released:
    """What a release found: whether the lease was still ours, and whether a delivery
    was turned away as busy while we held it."""

    released: bool
    rerun: bool


class LeaseManager:
    """Grants, renews and releases session leases on one Redis."""

    def __init__(self, client: redis.Redis, *, ttl: float) -> None:
        self.client = client
        self.ttl = ttl
        self._grant = client.register_script(GRANT)
        self._renew = client.register_script(RENEW)
        self._release = client.register_script(RELEASE)
        self._floor = client.register_script(FLOOR)

    @property
    def ttl_ms(self) -> int:
        return max(1, int(self.ttl * 1000))

    def grant(
        self,
        tenant_id: str,
        session_id: str,
        owner: str,
        *,
        floor: int | Callable[[], int],
    ) -> Lease | None:
        """A new lease above the floor, or None when someone holds the session.

        ``floor`` may be a function (reading Postgres): it is called only when Redis
        lost its counter.
        """
        keys = [lease_key(tenant_id, session_id), fence_key(), rerun_key(tenant_id, session_id)]
        known = floor if isinstance(floor, int) else UNKNOWN_FLOOR
        ok, value = self._grant(keys=keys, args=[owner, self.ttl_ms, known])
        if int(ok) == 2 and not isinstance(floor, int):
            ok, value = self._grant(keys=keys, args=[owner, self.ttl_ms, floor()])
        if int(ok) != 1:
            return None
        return Lease(tenant_id, session_id, owner, int(value))

    def renew(self, lease: Lease) -> bool:
        """Extend our lease by the TTL. False: it is gone or someone else's."""
        return int(self._renew(keys=[lease.key], args=[lease.value, self.ttl_ms])) == 1

    def renew_many(self, leases: list[Lease]) -> list[bool]:
        """Renew several leases in one pipelined round trip; True for each still ours."""
        pipe = self.client.pipeline(transaction=False)
        for lease in leases:
            self._renew(keys=[lease.key], args=[lease.value, self.ttl_ms], client=pipe)
        return [int(x) == 1 for x in pipe.execute()]

    def release(self, lease: Lease) -> Released:
        """Delete our lease (compare-and-delete) and say whether a delivery was turned
        away as busy meanwhile (the caller enqueues the session once more)."""
        released, rerun = self._release(
            keys=[lease.key, rerun_key(lease.tenant_id, lease.session_id)], args=[lease.value]
        )
        return Released(released=int(released) == 1, rerun=int(rerun) == 1)

    def raise_floor(self, floor: int) -> None:
        """Make the fence counter at least ``floor`` (a counter found behind Postgres)."""
        self._floor(keys=[fence_key()], args=[floor])

    def holder(self, tenant_id: str, session_id: str) -> str | None:
        value = self.client.get(lease_key(tenant_id, session_id))
        return None if value is None else value.decode() if isinstance(value, bytes) else str(value)

    def live(self, sessions: list[tuple[str, str]]) -> list[bool]:
        """Whether each session has a live lease, or waits for its rate limit's slot (a
        pace mark, store/pacer.py: it is sent again at its time), in one round trip."""
        if not sessions:
            return []
        pipe = self.client.pipeline(transaction=False)
        for tenant_id, session_id in sessions:
            pipe.exists(lease_key(tenant_id, session_id), paced_key(tenant_id, session_id))
        return [bool(x) for x in pipe.execute()]


def monotonic_deadline(ttl: float, *, started: float | None = None, margin: float = 0.2) -> float:
    """The monotonic instant before which a lease renewed at ``started`` is surely ours.

    ``margin`` (a fraction of the TTL) covers clock drift between us and Redis and the
    time the renewal took to arrive.
    """
    t0 = time.monotonic() if started is None else started
    return t0 + ttl * (1.0 - margin)
