"""The per-session Redis lease with monotonic fencing tokens.

Three Lua scripts, each atomic on the Redis server:

GRANT   KEYS[1] lease key, KEYS[2] fence counter; ARGV owner, ttl_ms, floor.
        If the lease key exists: {0, current value}. Otherwise the token is
        max(INCR counter, floor + 1), where floor is the highest fence Postgres has
        accepted for the session, so a Redis that lost its counter can never hand
        out a token at or below one already used. Sets "OWNER TOKEN" with PX ttl.
RENEW   KEYS[1] lease key; ARGV value, ttl_ms. PEXPIRE only if the value is ours.
RELEASE KEYS[1] lease key; ARGV value. DEL only if the value is ours.

The lease says who is alive; Postgres (``sessions.fence``) is the authority on
what may be written. A token is only useful once ``Store.claim`` accepted it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import redis

from store.keys import FENCE_COUNTER, lease_key

GRANT = """
local cur = redis.call('GET', KEYS[1])
if cur then return {0, cur} end
local n = redis.call('INCR', KEYS[2])
local floor = tonumber(ARGV[3])
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
  return redis.call('DEL', KEYS[1])
end
return 0
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


class LeaseManager:
    """Grants, renews and releases session leases on one Redis."""

    def __init__(self, client: redis.Redis, *, ttl: float) -> None:
        self.client = client
        self.ttl = ttl
        self._grant = client.register_script(GRANT)
        self._renew = client.register_script(RENEW)
        self._release = client.register_script(RELEASE)

    @property
    def ttl_ms(self) -> int:
        return max(1, int(self.ttl * 1000))

    def grant(self, tenant_id: str, session_id: str, owner: str, *, floor: int) -> Lease | None:
        """A new lease above ``floor``, or None when someone holds the session."""
        ok, value = self._grant(
            keys=[lease_key(tenant_id, session_id), FENCE_COUNTER],
            args=[owner, self.ttl_ms, floor],
        )
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

    def release(self, lease: Lease) -> bool:
        """Delete our lease (compare-and-delete). False: it was already gone."""
        return int(self._release(keys=[lease.key], args=[lease.value])) == 1

    def holder(self, tenant_id: str, session_id: str) -> str | None:
        value = self.client.get(lease_key(tenant_id, session_id))
        return None if value is None else value.decode() if isinstance(value, bytes) else str(value)

    def live(self, sessions: list[tuple[str, str]]) -> list[bool]:
        """Whether each session has a live lease, in one round trip."""
        if not sessions:
            return []
        pipe = self.client.pipeline(transaction=False)
        for tenant_id, session_id in sessions:
            pipe.exists(lease_key(tenant_id, session_id))
        return [bool(x) for x in pipe.execute()]


def monotonic_deadline(ttl: float, *, started: float | None = None, margin: float = 0.2) -> float:
    """The monotonic instant before which a lease renewed at ``started`` is surely ours.

    ``margin`` (a fraction of the TTL) covers clock drift between us and Redis and the
    time the renewal took to arrive.
    """
    t0 = time.monotonic() if started is None else started
    return t0 + ttl * (1.0 - margin)
