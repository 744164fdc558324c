"""Fair delivery across tenants: each send is a ticket, and a ticket runs whichever
session is next in a round of the tenants with work, not the one it was sent for.

The broker's queue is first in, first out (by priority): a tenant that admits 2,000
turns puts 2,000 messages ahead of another tenant's one. So the order is not left to
the broker. ``Producer.send`` (store/producer.py) first adds the session to its
tenant's ready set in Redis (``submit``), then sends ``run_session`` as a ticket
(``fair=True``). A worker that runs a ticket asks ``pick`` which session to run: the
highest priority band with work, in it the next tenant in rotation, of that tenant
the session that waited longest. B's one turn is therefore run by the very next
ticket any worker takes, whoever sent it; priorities hold on any broker, since the
pick takes the higher band first (the broker's own priority only brings the ticket
forward too).

Every ticket runs exactly one session, as a message did before: tickets and ready
entries are added together, and a ticket that finds every set empty runs the session
it was sent for. So nothing is lost when Redis loses the sets (the tickets run their
own sessions, first come first served), nor when the broker loses tickets (the
recovery scan sends the stalled sessions again). A session already in a set is not
added twice (the extra ticket runs someone else's, or its own); one run already by
another delivery is picked later and found idle, as a duplicate message always was.

A ticket that picks a session with nothing to run (run already by a duplicate, held
for a definition no live worker serves, its lease busy) runs its own session after it
(worker/app.py), so an entry without a ticket of its own (a crash between the two
sends) never strands another session.

Key layout (store/keys.py), per Celery queue (the tickets' queue: deployments sharing
a Redis prefix apart by ``TURNKEEP_QUEUE`` keep their sets apart too):
``P:fair:{queue}:ring:{band}`` a list of the tenants with ready sessions in that band,
each once; ``P:fair:{queue}:ready:{band}:{tenant}`` a sorted set of session ids scored
by the time they were first added. A tenant is in a band's ring exactly when its set
there is not empty; both scripts keep it so.

SUBMIT  KEYS[1] the tenant's ready set, KEYS[2] the band's ring; ARGV tenant,
        session, score. ZADD NX; a set that just became non-empty puts its tenant at
        the ring's tail. Returns 1 when the session was added.
PICK    KEYS the rings, highest band first; ARGV the ready sets' key prefix. In the
        first band with work: the ring's head tenant, its oldest session popped; the
        tenant goes back to the tail while it has more. Returns {tenant, session} or
        nil.
"""

from __future__ import annotations

import time
from typing import cast

import redis

from store import keys
from store.brokers import DEFAULT_PRIORITY, PRIORITIES

SUBMIT = """
local added = redis.call('ZADD', KEYS[1], 'NX', ARGV[3], ARGV[2])
if added == 1 and redis.call('ZCARD', KEYS[1]) == 1 then
  redis.call('RPUSH', KEYS[2], ARGV[1])
end
return added
"""

PICK = """
for i, ring in ipairs(KEYS) do
  local band = string.match(ring, ':(%d+)$')
  local n = redis.call('LLEN', ring)
  for _ = 1, n do
    local tenant = redis.call('LPOP', ring)
    if not tenant then break end
    local ready = ARGV[1] .. band .. ':' .. tenant
    local got = redis.call('ZPOPMIN', ready)
    if got[1] then
      if redis.call('ZCARD', ready) > 0 then redis.call('RPUSH', ring, tenant) end
      return {tenant, got[1]}
    end
  end
end
return false
"""

#: the bands, highest first: a turn's priority 0-9 is its band
BANDS = tuple(sorted(PRIORITIES, reverse=True))


def band(priority: int | None) -> int:
    return DEFAULT_PRIORITY if priority is None else priority


class FairQueue:
    """The ready sets and the rotation over them of ``queue``'s tickets, on the
    deployment's Redis."""

    def __init__(self, client: redis.Redis, queue: str) -> None:
        self.redis = client
        self.queue = queue
        self._submit = client.register_script(SUBMIT)
        self._pick = client.register_script(PICK)

    def submit(self, tenant_id: str, session_id: str, priority: int | None = None) -> bool:
        """Add the session to its tenant's ready set in ``priority``'s band (one round
        trip); False when it was there already."""
        b = band(priority)
        added = self._submit(
            keys=[keys.fair_ready_key(self.queue, b, tenant_id), keys.fair_ring_key(self.queue, b)],
            args=[tenant_id, session_id, int(time.time() * 1000)],
        )
        return bool(added)

    def pick(self) -> tuple[str, str] | None:
        """The next (tenant, session) to run, taken from its set; None when every set
        is empty (one round trip)."""
        got = self._pick(
            keys=[keys.fair_ring_key(self.queue, b) for b in BANDS],
            args=[keys.fair_ready_prefix(self.queue)],
        )
        if not got:
            return None
        tenant, session = cast(list[bytes], got)
        return tenant.decode(), session.decode()

    def waiting(self, tenant_id: str) -> int:
        """Sessions of ``tenant_id`` waiting in every band (for tests and operators)."""
        pipe = self.redis.pipeline(transaction=False)
        for b in BANDS:
            pipe.zcard(keys.fair_ready_key(self.queue, b, tenant_id))
        return sum(int(n) for n in pipe.execute())
