"""A delivery of ``run_session``: lease, then run the session's lane turn by turn.

The durable order (DESIGN.md), in as few statements as it allows: take the Redis
lease (the Postgres fence floor is read only when Redis lost its counter); one
statement claims the fence, starts the lane head's attempt and returns its context;
one fenced statement per step (worker/runner.py), the last one settling the turn and
saying whether the lane's next turn can run. Any ``LeaseLost`` ends the task at once
without another write.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from enum import StrEnum

from turnkeep.runtime import deploys
from turnkeep.runtime.deploys import Route
from turnkeep.runtime.obs import logs
from turnkeep.runtime.obs.faults import FaultPoint, hit
from turnkeep.runtime.pacing import PaceRequested
from turnkeep.runtime.signals import LeaseLost
from turnkeep.runtime.states import EventType, TurnState
from turnkeep.store.errors import Unavailable
from turnkeep.store.records import LaneStarted, TurnRecord
from turnkeep.worker import metrics, pace
from turnkeep.worker.checkpoint import Checkpointer, backoff
from turnkeep.worker.ports import Resources
from turnkeep.worker.runner import TurnRunner

log = logging.getLogger(__name__)


class RunOutcome(StrEnum):
    """What one ``run_session`` delivery did (Celery logs it; pinned in a test)."""

    #: ran or settled at least one turn
    RAN = "ran"
    #: nothing to do: the lane is empty or waits for someone's answer
    IDLE = "idle"
    #: another worker holds the session's lease: a harmless duplicate delivery
    BUSY = "busy"
    #: a newer fence was accepted first; nothing was written
    STALE = "stale"
    #: the lease was lost mid-run; this worker stopped writing to the session
    LEASE_LOST = "lease_lost"
    #: this worker has heard nothing from Postgres for over a lease TTL: it took no
    #: lease, and the recovery scan hands the session to a worker that can write
    UNREACHABLE = "unreachable"
    #: the lane head's definition is not served here: sent to a live worker serving it
    HANDED_ON = "handed_on"
    #: the lane head's definition is served by no live worker: it waits for one
    HELD = "held"
    #: the lane head's model call waits for its rate limit's slot: the session is sent
    #: again for that time (worker/pace.py)
    PACED = "paced"
    #: the lane head is at its tenant's or agent's max_running: it waits, queued, for
    #: a slot (store/held.py)
    LIMITED = "limited"


#: what a delivery did when it found nothing to run in its session: a fair ticket that
#: picked such a session runs its own after it (worker/app.py)
NOTHING_RUN = frozenset({RunOutcome.IDLE, RunOutcome.BUSY, RunOutcome.HELD})

_owner_seq = iter(range(1, 1 << 62))
_owner_lock = threading.Lock()


def _owner(ctx: Resources) -> str:
    with _owner_lock:
        return f"{ctx.owner_prefix}:{next(_owner_seq)}"


def run_session(ctx: Resources, tenant_id: str, session_id: str) -> RunOutcome:
    """Run a session's lane while this task holds its lease. Returns what happened."""
    with logs.bound(tenant=tenant_id, session=session_id):
        return _run_session(ctx, tenant_id, session_id)


def _run_session(ctx: Resources, tenant_id: str, session_id: str) -> RunOutcome:
    if not ctx.reaches_postgres():
        # whatever it started here could not be written: the delivery is dropped,
        # and the recovery scan enqueues the unleased session again once it stalls
        return RunOutcome.UNREACHABLE
    if pace.early(ctx, tenant_id, session_id):
        return RunOutcome.PACED  # sent again for the head's slot
    granted_at = time.monotonic()
    lease = ctx.leases.grant(
        tenant_id,
        session_id,
        _owner(ctx),
        floor=lambda: ctx.store.reads.fence_floor(tenant_id, session_id),
    )
    if lease is None:
        # a live holder runs the lane; the grant left it a rerun flag, so its
        # release enqueues the session once more should this delivery carry news
        return RunOutcome.BUSY
    heartbeat = ctx.heartbeat(lease, granted_at=granted_at)
    lane = Lane(ctx, Checkpointer(ctx.store, ctx.publisher, heartbeat, ctx.redactor))
    wake: float | None = None
    try:
        with logs.bound(fence=lease.fence):
            outcome = lane.run()
    except LeaseLost:
        log.warning("lease lost for a session; this worker stopped writing to it")
        outcome = RunOutcome.LEASE_LOST
    except PaceRequested as paced:
        # committed (turn.paced): the thread and the lease go back, the session comes
        # back when the call's slot does
        outcome, wake = RunOutcome.PACED, paced.seconds
    finally:
        heartbeat.stop()
        rerun = lane.rerun
        try:
            rerun = ctx.leases.release(lease).rerun or rerun
        except Exception as exc:  # the TTL frees it anyway; the scan covers the rest
            log.warning("lease release failed: %s", type(exc).__name__)
    if wake is not None:
        ctx.wake(tenant_id, session_id, wake)
    if rerun:
        ctx.enqueue(tenant_id, session_id)
    return outcome


class Lane:
    """Runs a session's turns oldest first under one lease, one start statement per
    turn and one statement per step."""

    def __init__(self, ctx: Resources, cp: Checkpointer) -> None:
        self.ctx = ctx
        self.cp = cp
        self.lease = cp.lease
        #: enqueue the session again after the release (a claim lost to a stale counter)
        self.rerun = False
        #: the last start's head is under a max_running limit (store/max_running.py), and
        #: the scope at its limit when that kept it from starting
        self.limited = False
        self.held_by: str | None = None

    def run(self) -> RunOutcome:
        outcome = RunOutcome.IDLE
        claim = True
        while True:
            started = self._start(claim)
            if not started.claimed:
                metrics.STALE_FENCE_REJECTIONS.inc()
                if not claim:  # a newer fence was accepted since our claim
                    raise LeaseLost("the fence moved on between two turns of the lane")
                return self._lost_claim(started)
            claim = False
            if started.turn is not None:
                if taken_over(started, self.lease.fence):
                    metrics.LEASE_TAKEOVERS.inc()
                    log.info("took over turn %s from an earlier holder", started.turn.turn_id)
                runner = TurnRunner(self.ctx, self.cp, started.turn, started)
                lane_runnable = runner.run()
                if self.limited:
                    # its slot is free again (settled or parked): a held session takes it
                    self.ctx.wake_held(started.turn.tenant_id, started.turn.agent_name)
            elif self.held_by is not None and started.head is not None:
                # at a max_running limit: queued, held until a slot frees (store/held.py)
                head = started.head
                agent = head.agent_name if self.held_by == "agent" else None
                self.ctx.hold(head.tenant_id, head.session_id, agent, head.created_at.timestamp())
                return RunOutcome.LIMITED if outcome is RunOutcome.IDLE else outcome
            elif started.head is not None and started.head.runnable:
                # runnable, but not startable here: an agent definition this worker
                # does not serve, or the attempt cap
                routed = self._unstarted(started.head)
                if isinstance(routed, RunOutcome):
                    return routed if outcome is RunOutcome.IDLE else outcome
                lane_runnable = routed
            else:
                return outcome
            outcome = RunOutcome.RAN
            if not lane_runnable:
                return outcome

    def _unstarted(self, head: TurnRecord) -> bool | RunOutcome:
        """A runnable lane head the start statement did not start: past the attempt
        cap, or on a definition this worker does not serve (runtime/deploys.py says
        what then). Returns whether the lane's next turn can run, or the outcome when
        the lane stops here with the turn unsettled."""
        ctx = self.ctx
        if ctx.agents.by_hash(head.agent_hash) is not None:
            return TurnRunner(ctx, self.cp, head).refuse()
        hashes, names = ctx.live_definitions()
        routing = deploys.route(
            ctx.agents,
            agent_name=head.agent_name,
            agent_hash=head.agent_hash,
            agent_version=head.agent_version,
            on_deploy=head.on_deploy,
            upgrade_requested=head.upgrade_requested,
            live_hashes=hashes,
            live_names=names,
        )
        metrics.DEFINITION_ROUTES.labels(head.agent_name, routing.route.value).inc()
        if routing.route is Route.HAND_ON:
            ctx.hand_on(head.tenant_id, head.session_id, head.agent_hash)
            return RunOutcome.HANDED_ON
        if routing.route is Route.HOLD:
            if head.cancel_requested:  # nobody else would ever stop it
                return TurnRunner(ctx, self.cp, head).cancel()
            log.warning("turn %s held: %s", head.turn_id, routing.reason)
            return RunOutcome.HELD
        if routing.route is Route.FAIL:
            assert routing.code is not None
            return TurnRunner(ctx, self.cp, head).refuse(routing.code, routing.reason)
        started = self._start(False, also=head.agent_hash)
        if started.turn is None:
            if started.head is not None and started.head.runnable:
                return TurnRunner(ctx, self.cp, started.head).refuse()
            return RunOutcome.IDLE
        return TurnRunner(ctx, self.cp, started.turn, started, move=routing.move).run()

    def _start(self, claim: bool, also: str | None = None) -> LaneStarted:
        """The start statement, asking Postgres after a lost reply whether the claim
        landed (it may have: then the attempt starts again under the same fence). A
        head under a max_running limit is left out of it and started under the
        tenant's limit lock (``_start_limited``)."""
        ctx, lease = self.ctx, self.lease
        self.cp.heartbeat.check()
        hit(FaultPoint.BEFORE_START)
        # also: a head this worker moves to a definition it serves
        hashes = ctx.agents.hashes if also is None else [*ctx.agents.hashes, also]
        agent_limits = ctx.agents.max_running
        tenant_max = ctx.tenant_max_running(lease.tenant_id)
        unlimited = [] if tenant_max is not None else [h for h in hashes if h not in agent_limits]
        self.limited, self.held_by = False, None
        delays = backoff()
        while True:
            try:
                started = ctx.store.turns.start(
                    lease.tenant_id,
                    lease.session_id,
                    lease.fence,
                    claim=claim,
                    agent_hashes=unlimited,
                    max_attempts=ctx.settings.worker.max_attempts,
                )
                head = started.head
                if started.turn is None and started.claimed and head is not None:
                    agent_max = agent_limits.get(head.agent_hash)
                    limited = tenant_max is not None or agent_max is not None
                    if head.agent_hash in hashes and limited:
                        started = self._start_limited(started, hashes, tenant_max, agent_max)
                break
            except Unavailable:
                log.warning("start failed: postgres unavailable; retrying")
            stored = self._stored_fence(delays)
            if stored > lease.fence:
                raise LeaseLost("a newer fence was accepted while the start was unknown")
            claim = claim and stored < lease.fence
        hit(FaultPoint.AFTER_START)
        if started.events:
            self.cp.publisher.committed(started.events[-1])
        return started

    def _start_limited(
        self, found: LaneStarted, hashes: list[str], tenant_max: int | None, agent_max: int | None
    ) -> LaneStarted:
        """Start the lane head ``found`` under its limits (store/max_running.py). A head
        already running (taken over from a dead worker) holds its slot: no count."""
        head = found.head
        assert head is not None
        holds_slot = head.state is TurnState.RUNNING
        started, held_by, room = self.ctx.store.max_running.start_limited(
            self.lease.tenant_id,
            self.lease.session_id,
            self.lease.fence,
            agent_name=head.agent_name,
            agent_hashes=hashes,
            max_attempts=self.ctx.settings.worker.max_attempts,
            tenant_max=None if holds_slot else tenant_max,
            agent_max=None if holds_slot else agent_max,
            tenant_default=self.ctx.settings.limits.max_running_per_tenant,
        )
        self.limited, self.held_by = True, held_by
        if started is None:
            return found
        if started.turn is not None and not holds_slot:
            # whichever path sent it (a wake, the scan, a fresh enqueue), it holds a
            # slot now: no longer held; and a slot left over goes on to the next held
            self.ctx.started_held(head.tenant_id, head.session_id, head.agent_name, room)
        # the claim was the first statement's
        return replace(started, claimed=found.claimed)

    def _stored_fence(self, delays: Iterator[float]) -> int:
        while True:
            time.sleep(next(delays))
            self.cp.heartbeat.check()
            try:
                return self.ctx.store.reads.fence_floor(self.lease.tenant_id, self.lease.session_id)
            except Unavailable:
                continue

    def _lost_claim(self, started: LaneStarted) -> RunOutcome:
        if started.stored_fence < self.lease.fence:
            return RunOutcome.IDLE  # no session row: nothing was ever admitted here
        # Postgres holds a fence at or above Redis's token. While we hold the lease
        # nobody else can have claimed it, so the counter is behind (a restored
        # Redis): raise it, and have the session enqueued again: the next delivery
        # gets a token above every fence used.
        self.ctx.leases.raise_floor(started.stored_fence)
        self.rerun = True
        return RunOutcome.STALE


def taken_over(started: LaneStarted, fence: int) -> bool:
    """Whether this start took its turn over: the turn was running under another fence
    (its holder died, or lost the lease, before settling or parking it)."""
    head = started.head
    if head is None or head.state is not TurnState.RUNNING:
        return False
    earlier = started.events[:-1]  # the last one is this start's turn.started
    return any(e.type == EventType.TURN_STARTED and e.fence != fence for e in earlier)
