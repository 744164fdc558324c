"""The heartbeat: renews session leases from the runtime, never from tool code.

One renewal thread per worker process (``LeaseKeeper``) renews every lease the
process holds, all in one pipelined round trip every TTL/3: a thread per session
would put hundreds of sleeping threads between Celery's consumer and the GIL.

Each ``Heartbeat`` keeps ``valid_until``: a monotonic instant computed from when the
last successful renewal was *sent*, less a margin, so the worker stops before its
lease could have expired in Redis even if the reply was slow. A renewal that finds
the lease gone, or no successful renewal before ``valid_until``, marks the lease lost
for good (a renewal that lands later does not undo it): every later ``check()``
raises ``LeaseLost`` and the worker writes nothing more.
"""

from __future__ import annotations

import logging
import os
import threading
import time

import redis

from runtime.faults import FaultPoint, hit
from runtime.signals import LeaseLost
from store.lease import Lease, LeaseManager, monotonic_deadline

log = logging.getLogger(__name__)


class Heartbeat:
    """The liveness of one held lease, kept up by the process's ``LeaseKeeper``."""

    def __init__(self, leases: LeaseManager, lease: Lease, *, granted_at: float) -> None:
        self.leases = leases
        self.lease = lease
        self.valid_until = monotonic_deadline(leases.ttl, started=granted_at)
        self._lost = threading.Event()
        self._keeper = LeaseKeeper.of(leases)

    def start(self) -> Heartbeat:
        self._keeper.add(self)
        return self

    def stop(self) -> None:
        self._keeper.remove(self)

    @property
    def lost(self) -> bool:
        # sticky: once the deadline passed, the lease may have been someone else's, and
        # whatever stopped on seeing "lost" must not find it valid again because a late
        # renewal landed after all
        if not self._lost.is_set() and time.monotonic() >= self.valid_until:
            self._lost.set()
        return self._lost.is_set()

    def check(self) -> None:
        """Raise LeaseLost unless the lease is surely still ours."""
        if self.lost:
            raise LeaseLost("the session lease was lost or could not be renewed in time")

    def renewed(self, sent: float, ok: bool) -> None:
        if self._lost.is_set():
            return
        if not ok:
            log.warning("lease for a session is gone; stopping its writes")
            self._lost.set()
        elif sent < self.valid_until:  # never revive a lease whose deadline passed
            self.valid_until = monotonic_deadline(self.leases.ttl, started=sent)


class LeaseKeeper:
    """The one thread of a process that renews all its leases every TTL/3."""

    _lock = threading.Lock()
    _keepers: dict[tuple[int, int], LeaseKeeper] = {}

    @classmethod
    def of(cls, leases: LeaseManager) -> LeaseKeeper:
        # keyed by pid too: a prefork child inherits the dict but not the thread
        key = (os.getpid(), id(leases))
        with cls._lock:
            keeper = cls._keepers.get(key)
            if keeper is None or keeper.leases is not leases:
                keeper = cls._keepers[key] = LeaseKeeper(leases)
            return keeper

    def __init__(self, leases: LeaseManager) -> None:
        self.leases = leases
        self.interval = leases.ttl / 3.0
        self._held: set[Heartbeat] = set()
        self._held_lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def add(self, heartbeat: Heartbeat) -> None:
        with self._held_lock:
            self._held.add(heartbeat)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="lease-keeper", daemon=True)
                self._thread.start()

    def remove(self, heartbeat: Heartbeat) -> None:
        with self._held_lock:
            self._held.discard(heartbeat)

    def _run(self) -> None:
        while True:
            time.sleep(self.interval)
            with self._held_lock:
                held = [h for h in self._held if not h.lost]
            if held:
                self.renew(held)

    def renew(self, held: list[Heartbeat]) -> None:
        hit(FaultPoint.IN_LEASE_RENEWAL)
        sent = time.monotonic()
        try:
            results = self.leases.renew_many([h.lease for h in held])
        except redis.RedisError as exc:
            # nothing to do but let each lease run towards its deadline: ``lost`` turns
            # true by itself once it passes
            log.warning("lease renewal failed: %s", type(exc).__name__)
            return
        for heartbeat, ok in zip(held, results, strict=True):
            heartbeat.renewed(sent, ok)
