"""The heartbeat: renews one session lease from the runtime, never from tool code.

It renews every TTL/3. ``valid_until`` is a monotonic instant computed from when a
renewal was *sent*, less a margin, so the worker stops before its lease could have
expired in Redis even if the renewal reply was slow. A renewal that finds the lease
gone, or no successful renewal before ``valid_until``, marks the lease lost for good
(a renewal that lands later does not undo it): every later ``check()`` raises
``LeaseLost`` and the worker writes nothing more.
"""

from __future__ import annotations

import logging
import threading
import time

import redis

from runtime.faults import FaultPoint, hit
from store.errors import LeaseLost
from store.lease import Lease, LeaseManager, monotonic_deadline

log = logging.getLogger(__name__)


class Heartbeat:
    """Keeps one lease alive on a daemon thread while a session runs."""

    def __init__(self, leases: LeaseManager, lease: Lease, *, granted_at: float) -> None:
        self.leases = leases
        self.lease = lease
        self.interval = leases.ttl / 3.0
        self.valid_until = monotonic_deadline(leases.ttl, started=granted_at)
        self._lost = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._run, name=f"heartbeat-{lease.session_id}", daemon=True
        )

    def start(self) -> Heartbeat:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=self.leases.ttl)

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
            self._lost.set()
            raise LeaseLost("the session lease was lost or could not be renewed in time")

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            if self._lost.is_set():
                return
            hit(FaultPoint.IN_LEASE_RENEWAL)
            sent = time.monotonic()
            try:
                ok = self.leases.renew(self.lease)
            except redis.RedisError as exc:
                log.warning("lease renewal failed: %s", type(exc).__name__)
                if time.monotonic() >= self.valid_until:
                    self._lost.set()
                    return
                continue
            if not ok:
                log.warning("lease for a session is gone; stopping its writes")
                self._lost.set()
                return
            self.valid_until = monotonic_deadline(self.leases.ttl, started=sent)
