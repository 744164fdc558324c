"""Provider rate limits shared by every worker: one Redis hash per declared limit and
endpoint (store/keys.py ``pace_key``), moved by atomic Lua scripts on Redis's clock.

The algorithm is GCRA (the generic cell rate algorithm) with reservations. A bucket
keeps, per dimension, its theoretical arrival time: ``r`` for requests, ``t`` for
tokens, in milliseconds of Redis's ``TIME``. A request adds ``60000 / rpm`` ms to
``r``; a call of N tokens adds ``N * 60000 / tpm`` ms to ``t``. A call may go at the
earliest time ``slot`` with ``slot >= r - tau``, ``slot >= t - tau`` and ``slot >= b``
in every bucket it counts against (``tau``: the limit's burst, in ms; ``b``: a wait
the provider asked for). RESERVE books that slot for the call at once, whether it is
now or ahead: each dimension becomes ``max(x, slot) + cost``. A call that must wait
keeps its place: the calls booked after it get later slots, never its own, so a
burst is served in the order it asked and no waiter spins. Over any window of W ms a
bucket admits at most ``1 + (tau + W) / interval`` requests (and as many tokens as
that, less one call's): with ``tau`` 0, a 60-per-minute limit lets 61 calls through
in the worst minute.

RESERVE  KEYS: the buckets; ARGV[1] the longest wait the caller accepts (ms, -1: any),
         ARGV[2] the call's tokens, then three per bucket: request interval (ms, 0:
         no request limit), token interval (ms per token, 0: none), tau (ms).
         Returns {1, wait ms, why, bucket index, now ms}, booked; or {0, wait ms, why,
         bucket index, now ms} when the wait is past ARGV[1], nothing booked. ``why``
         is ``requests``, ``tokens`` or ``provider`` (``b`` set the slot), "" for none.
SETTLE   KEYS: the buckets; ARGV[1] tokens used less tokens booked (the provider's
         usage against the estimate); then one token interval per bucket. Moves ``t``
         by the difference: a call that used less gives the rest back.
BLOCK    KEYS: the buckets; ARGV[1] ms. ``b = max(b, now + ms)``: the provider said
         wait (a 429's Retry-After, a limit its headers report used up).

Every script sets the bucket's PX TTL past its furthest time: an idle bucket is gone.
A bucket lost (a Redis restart) starts empty: at worst one burst goes through, and the
provider's 429s are then fed back by BLOCK.

The session's pace mark (``paced_key``) says its head turn waits for a slot: the
recovery scan counts it as a live lease (store/lease.py ``live``), so a paced session
is not sent again before its time, and the API shows it on the turn (``paced``).
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass

import redis
from prometheus_client.core import GaugeMetricFamily, Metric

from turnkeep.runtime.ratelimits import RateLimit
from turnkeep.store.keys import pace_key, paced_index_key, paced_key

log = logging.getLogger(__name__)

RESERVE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local cost = tonumber(ARGV[2])
local slot, why, which = now, '', 0
local state = {}
for i, key in ipairs(KEYS) do
  local o = 2 + (i - 1) * 3
  local ri, ti, tau = tonumber(ARGV[o + 1]), tonumber(ARGV[o + 2]), tonumber(ARGV[o + 3])
  local h = redis.call('HMGET', key, 'r', 't', 'b')
  local r, tk, b = tonumber(h[1]) or 0, tonumber(h[2]) or 0, tonumber(h[3]) or 0
  state[i] = {r, tk, b, ri, ti}
  if ri > 0 and r - tau > slot then slot, why, which = r - tau, 'requests', i end
  if ti > 0 and tk - tau > slot then slot, why, which = tk - tau, 'tokens', i end
  if b > slot then slot, why, which = b, 'provider', i end
end
local wait = slot - now
local limit = tonumber(ARGV[1])
if limit >= 0 and wait > limit then
  return {0, tostring(wait), why, which, tostring(now)}
end
for i, key in ipairs(KEYS) do
  local s = state[i]
  local r, tk = s[1], s[2]
  if s[4] > 0 then r = math.max(r, slot) + s[4] end
  if s[5] > 0 then tk = math.max(tk, slot) + s[5] * cost end
  redis.call('HSET', key, 'r', tostring(r), 't', tostring(tk))
  redis.call('PEXPIRE', key, math.ceil(math.max(r, tk, s[3]) - now) + 60000)
end
return {1, tostring(wait), why, which, tostring(now)}
"""

SETTLE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local delta = tonumber(ARGV[1])
for i, key in ipairs(KEYS) do
  local ti = tonumber(ARGV[1 + i])
  local tk = tonumber(redis.call('HGET', key, 't') or '')
  if ti > 0 and tk then
    tk = tk + delta * ti
    redis.call('HSET', key, 't', tostring(tk))
    local ttl = redis.call('PTTL', key)
    local need = math.ceil(tk - now) + 60000
    if need > ttl then redis.call('PEXPIRE', key, need) end
  end
end
return 1
"""

BLOCK = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local b = now + tonumber(ARGV[1])
for _, key in ipairs(KEYS) do
  local cur = tonumber(redis.call('HGET', key, 'b') or '') or 0
  if b > cur then
    redis.call('HSET', key, 'b', tostring(b))
    local ttl = redis.call('PTTL', key)
    if b - now + 60000 > ttl then redis.call('PEXPIRE', key, math.ceil(b - now) + 60000) end
  end
end
return 1
"""


@dataclass(frozen=True)
class Bucket:
    """One declared limit's shared bucket for one endpoint."""

    limit: RateLimit
    #: ``turnkeep.runtime.ratelimits.bucket_id``
    id: str

    @property
    def key(self) -> str:
        return pace_key(self.id)


@dataclass(frozen=True)
class Reservation:
    """A slot RESERVE found: booked, unless it was past the wait the caller accepts."""

    booked: bool
    #: seconds from now to the slot
    wait: float
    #: the slot, in ms of Redis's clock (the Unix epoch)
    until_ms: int
    #: the limit that set the slot, and how: ``requests``, ``tokens``, ``provider``
    limit: str
    reason: str


@dataclass(frozen=True)
class Mark:
    """A session's pace mark: its head turn waits for a slot."""

    turn_id: str
    step: int
    #: ISO 8601, UTC
    until: str
    limit: str
    reason: str

    @classmethod
    def from_json(cls, raw: str | bytes) -> Mark:
        data = json.loads(raw)
        return cls(**{k: data[k] for k in ("turn_id", "step", "until", "limit", "reason")})


def read_mark(client: redis.Redis, tenant_id: str, session_id: str) -> Mark | None:
    """A session's pace mark (one GET), None when it is not paced."""
    raw: bytes | str | None = client.get(paced_key(tenant_id, session_id))  # type: ignore[assignment]
    return None if raw is None else Mark.from_json(raw)


class Pacer:
    """The shared buckets and the sessions' pace marks on one Redis."""

    def __init__(self, client: redis.Redis) -> None:
        self.client = client
        self._reserve = client.register_script(RESERVE)
        self._settle = client.register_script(SETTLE)
        self._block = client.register_script(BLOCK)

    def reserve(
        self, buckets: Sequence[Bucket], tokens: int, *, max_wait: float | None = None
    ) -> Reservation:
        """Book the earliest slot all ``buckets`` allow for one call of ``tokens``
        (not booked when it is more than ``max_wait`` seconds ahead)."""
        args: list[float | int] = [-1 if max_wait is None else max(0, int(max_wait * 1000))]
        args.append(max(0, int(tokens)))
        for b in buckets:
            args += [b.limit.request_interval_ms, b.limit.token_interval_ms]
            args.append(int(b.limit.burst_seconds * 1000))
        ok, wait, why, which, now = self._reserve(keys=[b.key for b in buckets], args=args)
        wait_ms = max(0.0, float(wait))
        name = buckets[int(which) - 1].limit.name if int(which) > 0 else ""
        reason = why.decode() if isinstance(why, bytes) else str(why)
        return Reservation(
            booked=int(ok) == 1,
            wait=wait_ms / 1000.0,
            until_ms=round(float(now) + wait_ms),
            limit=name,
            reason=reason,
        )

    def settle(self, buckets: Sequence[Bucket], booked: int, used: int) -> None:
        """Correct the token buckets by what the call used against what it booked."""
        args: list[float | int] = [int(used) - int(booked)]
        args += [b.limit.token_interval_ms for b in buckets]
        self._settle(keys=[b.key for b in buckets], args=args)

    def block(self, buckets: Sequence[Bucket], seconds: float) -> None:
        """No call goes through ``buckets`` for ``seconds``: the provider said so."""
        self._block(keys=[b.key for b in buckets], args=[max(0, int(seconds * 1000))])

    # -- the sessions' pace marks ----------------------------------------------------

    def mark(
        self, tenant_id: str, session_id: str, mark: Mark, *, until_ms: int, ttl: float
    ) -> None:
        """Mark the session paced for ``ttl`` seconds (the wait and a lease TTL)."""
        pipe = self.client.pipeline(transaction=False)
        pipe.set(
            paced_key(tenant_id, session_id),
            json.dumps(asdict(mark)),
            px=max(1, int(ttl * 1000)),
        )
        pipe.zadd(paced_index_key(), {f"{tenant_id}:{session_id}": until_ms})
        # the waits that ended go, so the index holds the paced sessions only
        pipe.zremrangebyscore(paced_index_key(), "-inf", int(time.time() * 1000))
        pipe.execute()

    def pending(self, tenant_id: str, session_id: str) -> Mark | None:
        """The session's pace mark, None when it is not paced."""
        return read_mark(self.client, tenant_id, session_id)

    def paced_now(self) -> int:
        """How many sessions wait for a slot now, deployment-wide (ended ones dropped)."""
        pipe = self.client.pipeline(transaction=False)
        pipe.zremrangebyscore(paced_index_key(), "-inf", int(time.time() * 1000))
        pipe.zcard(paced_index_key())
        return int(pipe.execute()[1])


#: seconds one reading of the paced count serves scrapes for
PACED_TTL = 2.0


class PacedTurns:
    """``turnkeep_turns_paced``: the turns whose model call waits for a rate limit's
    slot now, deployment-wide (every process shows the same value), read at scrape
    time at most once per ``ttl`` (a collector: ``registry.register(...)``)."""

    def __init__(self, pacer: Pacer, *, ttl: float = PACED_TTL) -> None:
        self.pacer = pacer
        self.ttl = ttl
        self._lock = threading.Lock()
        self._read_at = -ttl
        self._count: int | None = None

    def describe(self) -> list[Metric]:
        return []  # known only at scrape time

    def collect(self) -> Iterator[Metric]:
        with self._lock:
            if time.monotonic() - self._read_at >= self.ttl:
                try:
                    self._count = self.pacer.paced_now()
                except redis.RedisError as exc:  # out of reach: no gauge this scrape
                    log.debug("paced turns not counted: %s", type(exc).__name__)
                    self._count = None
                self._read_at = time.monotonic()
            count = self._count
        if count is not None:
            yield GaugeMetricFamily(
                "turnkeep_turns_paced",
                "Turns whose model call waits for a provider rate limit's slot now",
                value=count,
            )
