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

A lease says the holder is alive *and able to write*. A process that has heard
nothing from Postgres for longer than the lease TTL (``PostgresProbe``: its own
round trip every TTL/3, on its own thread and connection, so the step path pays
nothing) can write nothing: the keeper marks its leases lost and gives them back,
the recovery scan hands the sessions to a worker that can, and whatever the cut-off
worker still had in flight is refused by the fence once the partition heals.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable

import redis

from turnkeep.runtime.obs import logs
from turnkeep.runtime.obs.faults import FaultPoint, hit
from turnkeep.runtime.signals import LeaseLost
from turnkeep.store.lease import Lease, LeaseManager, monotonic_deadline

log = logging.getLogger(__name__)


class Heartbeat:
    """The liveness of one held lease, kept up by the process's ``LeaseKeeper``."""

    def __init__(
        self,
        leases: LeaseManager,
        lease: Lease,
        *,
        granted_at: float,
        probe: PostgresProbe | None = None,
    ) -> None:
        self.leases = leases
        self.lease = lease
        self.valid_until = monotonic_deadline(leases.ttl, started=granted_at)
        self._lost = threading.Event()
        self._keeper = LeaseKeeper.of(leases, probe)

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
            lease = self.lease
            # on the keeper's thread: the session's ids are bound here, not by a task
            with logs.bound(tenant=lease.tenant_id, session=lease.session_id, fence=lease.fence):
                log.warning("lease for a session is gone; stopping its writes")
            self._lost.set()
        elif sent < self.valid_until:  # never revive a lease whose deadline passed
            self.valid_until = monotonic_deadline(self.leases.ttl, started=sent)

    def let_go(self) -> None:
        """Mark the lease lost for good before it is given back: nothing is written
        under it any more."""
        self._lost.set()


class PostgresProbe:
    """How long this process has heard nothing from Postgres.

    ``ping`` (one round trip; raises when Postgres does not answer) runs every
    ``interval`` on the probe's own thread, so a ping stuck on a silent network holds
    nobody up: ``silent_for`` just grows. The clock starts when the probe does.
    """

    def __init__(self, ping: Callable[[], None], *, interval: float) -> None:
        self.ping = ping
        self.interval = interval
        #: monotonic instant of the last answer (or of the start)
        self.answered = time.monotonic()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def start(self) -> PostgresProbe:
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self.answered = time.monotonic()
                self._thread = threading.Thread(
                    target=self._run, name="postgres-probe", daemon=True
                )
                self._thread.start()
        return self

    def silent_for(self) -> float:
        return time.monotonic() - self.answered

    def round_trip(self) -> bool:
        """One ping; True (and the clock reset) when Postgres answered."""
        try:
            self.ping()
        except Exception as exc:  # Unavailable, or whatever a broken network raises
            log.debug("postgres probe failed: %s", type(exc).__name__)
            return False
        self.answered = time.monotonic()
        return True

    def _run(self) -> None:
        while True:
            self.round_trip()
            time.sleep(self.interval)


class LeaseKeeper:
    """The one thread of a process that renews all its leases every TTL/3, and gives
    them all back once the process's ``PostgresProbe`` has been silent for a TTL."""

    _lock = threading.Lock()
    _keepers: dict[tuple[int, int], LeaseKeeper] = {}

    @classmethod
    def of(cls, leases: LeaseManager, probe: PostgresProbe | None = None) -> LeaseKeeper:
        # keyed by pid too: a prefork child inherits the dict but not the thread
        key = (os.getpid(), id(leases))
        with cls._lock:
            keeper = cls._keepers.get(key)
            if keeper is None or keeper.leases is not leases:
                keeper = cls._keepers[key] = LeaseKeeper(leases, probe)
            elif probe is not None:
                keeper.probe = probe
            return keeper

    def __init__(self, leases: LeaseManager, probe: PostgresProbe | None = None) -> None:
        self.leases = leases
        self.probe = probe
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
        # wakes twice per renewal: a process cut off from Postgres lets go within
        # TTL/6 of its probe's silence passing the TTL
        beat = 0
        while True:
            time.sleep(self.interval / 2)
            beat += 1
            self.tick(renew=beat % 2 == 0)

    def tick(self, *, renew: bool = True) -> None:
        """One round: let every held lease go when Postgres is out of reach, else
        (``renew``) renew them all."""
        with self._held_lock:
            held = [h for h in self._held if not h.lost]
        if not held:
            return
        silent = 0.0 if self.probe is None else self.probe.silent_for()
        if silent > self.leases.ttl:
            self.let_go(held, silent)
        elif renew:
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

    def let_go(self, held: list[Heartbeat], silent: float) -> None:
        """This process cannot write: mark its leases lost, then give them back so
        that the recovery scan hands the sessions to a worker that can. A release
        that fails leaves the lease to run out by itself (a TTL later)."""
        log.warning(
            "postgres out of reach for %.1fs, past the lease TTL: letting %d session lease(s) go",
            silent,
            len(held),
        )
        for heartbeat in held:
            heartbeat.let_go()
        for heartbeat in held:
            try:
                # a delivery turned away as busy meanwhile needs no rerun flag: the
                # session is unleased and stalled, so the scan enqueues it anyway
                self.leases.release(heartbeat.lease)
            except redis.RedisError as exc:
                log.warning("lease release failed: %s", type(exc).__name__)
