"""The shared rate-limit buckets and pace marks of store/pacer.py, in memory: the same
GCRA with reservations in Python, on a clock the test moves. tests/contract/
test_pacer.py runs the same cases against it and the Lua scripts on a real Redis.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from turnkeep.store.pacer import Bucket, Mark, Reservation


@dataclass
class _State:
    r: float = 0.0
    t: float = 0.0
    b: float = 0.0
    #: ms of the clock when the bucket is gone (its PX TTL)
    expires: float = math.inf


@dataclass
class InMemoryPacer:
    """``turnkeep.store.pacer.Pacer`` over dicts. ``clock``: seconds since the epoch."""

    clock: Callable[[], float] = time.time
    buckets: dict[str, _State] = field(default_factory=dict)
    marks: dict[tuple[str, str], tuple[Mark, float, int]] = field(default_factory=dict)
    #: every reservation made, in order (for the tests' counting)
    reservations: list[Reservation] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def _now(self) -> float:
        return math.floor(self.clock() * 1000)

    def _state(self, key: str, now: float) -> _State:
        found = self.buckets.get(key)
        if found is None or found.expires <= now:
            found = self.buckets[key] = _State()
        return found

    def reserve(
        self, buckets: Sequence[Bucket], tokens: int, *, max_wait: float | None = None
    ) -> Reservation:
        with self._lock:
            now = self._now()
            slot, why, which = now, "", 0
            states = [self._state(b.key, now) for b in buckets]
            for i, (b, s) in enumerate(zip(buckets, states, strict=True), start=1):
                tau = int(b.limit.burst_seconds * 1000)
                if b.limit.request_interval_ms > 0 and s.r - tau > slot:
                    slot, why, which = s.r - tau, "requests", i
                if b.limit.token_interval_ms > 0 and s.t - tau > slot:
                    slot, why, which = s.t - tau, "tokens", i
                if s.b > slot:
                    slot, why, which = s.b, "provider", i
            wait = slot - now
            limit = -1 if max_wait is None else max(0, int(max_wait * 1000))
            booked = not (limit >= 0 and wait > limit)
            if booked:
                for b, s in zip(buckets, states, strict=True):
                    if b.limit.request_interval_ms > 0:
                        s.r = max(s.r, slot) + b.limit.request_interval_ms
                    if b.limit.token_interval_ms > 0:
                        s.t = max(s.t, slot) + b.limit.token_interval_ms * max(0, int(tokens))
                    s.expires = now + math.ceil(max(s.r, s.t, s.b) - now) + 60_000
            found = Reservation(
                booked=booked,
                wait=max(0.0, wait) / 1000.0,
                until_ms=round(now + max(0.0, wait)),
                limit=buckets[which - 1].limit.name if which else "",
                reason=why,
            )
            self.reservations.append(found)
            return found

    def settle(self, buckets: Sequence[Bucket], booked: int, used: int) -> None:
        with self._lock:
            now = self._now()
            for b in buckets:
                s = self.buckets.get(b.key)
                if s is None or s.expires <= now or b.limit.token_interval_ms <= 0:
                    continue
                s.t += (int(used) - int(booked)) * b.limit.token_interval_ms
                s.expires = max(s.expires, now + math.ceil(s.t - now) + 60_000)

    def block(self, buckets: Sequence[Bucket], seconds: float) -> None:
        with self._lock:
            now = self._now()
            until = now + max(0, int(seconds * 1000))
            for b in buckets:
                s = self._state(b.key, now)
                if until > s.b:
                    s.b = until
                    s.expires = max(s.expires, until + 60_000)

    def mark(
        self, tenant_id: str, session_id: str, mark: Mark, *, until_ms: int, ttl: float
    ) -> None:
        with self._lock:
            expires = self.clock() + ttl
            self.marks[(tenant_id, session_id)] = (mark, expires, until_ms)

    def pending(self, tenant_id: str, session_id: str) -> Mark | None:
        with self._lock:
            found = self.marks.get((tenant_id, session_id))
            if found is None or found[1] <= self.clock():
                return None
            return found[0]

    def paced_now(self) -> int:
        with self._lock:
            now = self.clock() * 1000
            return sum(1 for _, _, until in self.marks.values() if until > now)
