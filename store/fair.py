"""Fair delivery across tenants: each send is a ticket, and a ticket runs whichever
session is next in a round of the tenants with work, not the one it was sent for.

The broker's queue is first in, first out (by priority): a tenant that admits 2,000
turns puts 2,000 messages ahead of another tenant's one. So the order is not left to
the broker. ``Producer.send`` (store/producer.py) first adds the session to its
tenant's ready set in Redis (``submit``), then sends ``run_session`` as a ticket
(``fair=True``). A worker that runs a ticket asks ``pick`` which session to run: the
next tenant in rotation, whatever the priorities of its work; of that tenant, its
highest priority band with work, and in it the session that waited longest. B's one
turn is therefore run by the very next ticket any worker takes, whoever sent it and
at whatever priority: priority orders a tenant's own work, and a tenant that admits
its backlog at 9 gets no more of the workers than one that admits at 5 (the broker's
own priority only brings a ticket forward, and every ticket picks).

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
``P:fair:{queue}:tenants`` a list, the rotation of the tenants with ready sessions,
each once; ``P:fair:{queue}:rotating`` a set, the same tenants (whether one is in the
list without walking it); ``P:fair:{queue}:ready:{band}:{tenant}`` a sorted set of
session ids scored by the time they were first added. A tenant is in the rotation
exactly when one of its sets is not empty; both scripts keep it so.
``P:fair:{queue}:ring:{band}``, a ring per band of the version before (which served
the highest band first across tenants), is drained by ``pick`` once the rotation is
empty and never added to: sessions sent before an upgrade still run.

SUBMIT  KEYS[1] the tenant's ready set in the session's band, KEYS[2] the rotation,
        KEYS[3] its set; ARGV tenant, session, score. ZADD NX; a tenant not in the
        rotation goes to its tail. Returns 1 when the session was added.
PICK    KEYS[1] the rotation, KEYS[2] its set, KEYS[3..] the per-band rings of the
        version before, highest band first; ARGV[1] the ready sets' key prefix,
        ARGV[2..] the bands, highest first. The rotation's head tenant, the oldest
        session of its highest band with work popped; the tenant goes back to the tail
        while it has more, else leaves the set. Returns {tenant, session} or nil.
"""

from __future__ import annotations

import time
from typing import cast

import redis

from turnkeep.store import keys
from turnkeep.store.brokers import DEFAULT_PRIORITY, PRIORITIES

SUBMIT = """
local added = redis.call('ZADD', KEYS[1], 'NX', ARGV[3], ARGV[2])
if redis.call('SADD', KEYS[3], ARGV[1]) == 1 then redis.call('RPUSH', KEYS[2], ARGV[1]) end
return added
"""

PICK = """
local n = redis.call('LLEN', KEYS[1])
for _ = 1, n do
  local tenant = redis.call('LPOP', KEYS[1])
  if not tenant then break end
  local got, more = nil, false
  for i = 2, #ARGV do
    local ready = ARGV[1] .. ARGV[i] .. ':' .. tenant
    if got == nil then
      local popped = redis.call('ZPOPMIN', ready)
      if popped[1] then got = popped[1] end
    end
    if got ~= nil and redis.call('EXISTS', ready) == 1 then
      more = true
      break
    end
  end
  if more then redis.call('RPUSH', KEYS[1], tenant) else redis.call('SREM', KEYS[2], tenant) end
  if got then return {tenant, got} end
end
for k = 3, #KEYS do
  local band = ARGV[k - 1]
  local m = redis.call('LLEN', KEYS[k])
  for _ = 1, m do
    local tenant = redis.call('LPOP', KEYS[k])
    if not tenant then break end
    local ready = ARGV[1] .. band .. ':' .. tenant
    local got = redis.call('ZPOPMIN', ready)
    if got[1] then
      if redis.call('ZCARD', ready) > 0 then redis.call('RPUSH', KEYS[k], tenant) end
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
            keys=[
                keys.fair_ready_key(self.queue, b, tenant_id),
                keys.fair_ring_key(self.queue),
                keys.fair_rotating_key(self.queue),
            ],
            args=[tenant_id, session_id, int(time.time() * 1000)],
        )
        return bool(added)

    def pick(self) -> tuple[str, str] | None:
        """The next (tenant, session) to run, taken from its set; None when every set
        is empty (one round trip)."""
        got = self._pick(
            keys=[
                keys.fair_ring_key(self.queue),
                keys.fair_rotating_key(self.queue),
                *(keys.fair_legacy_ring_key(self.queue, b) for b in BANDS),
            ],
            args=[keys.fair_ready_prefix(self.queue), *BANDS],
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
