"""A model call under the provider rate limits declared for it (runtime/ratelimits.py),
paced through the buckets every worker shares (store/pacer.py).

Before the call, its slot is booked: a request and its tokens (the context budget's
estimate and the output it may produce). A slot within ``TURNKEEP_PACE_HOLD`` is
waited for on the thread; a later one commits ``turn.paced`` (the attempt given
back), marks the session paced and raises ``PaceRequested``: the lane releases the
lease and the session is sent again, with a countdown, for the slot's time
(worker/lane.py), a moment early (``wake_lead``). The attempt that resumes finds the
slot booked in the journal (runtime/pacing.py), waits the rest out and makes the call
at its time. A provider 429 is no failure: its Retry-After (or a backoff growing with the
refusals) blocks the shared buckets, and the call is paced again; the turn's
wall-clock bound is the only end to it. The reply's headers correct the buckets (a
limit the provider reports used up), and its usage the tokens booked.

No limit declared for the call's provider and model: the call is made as before,
with nothing read and nothing written.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import NoReturn

import redis

from turnkeep.runtime import decisions, pacing, ratelimits, window
from turnkeep.runtime.agents.definition import AgentDefinition
from turnkeep.runtime.errors import BudgetExceeded, ProviderRateLimited
from turnkeep.runtime.messages import ModelRequest, ModelResponse
from turnkeep.runtime.obs.faults import FaultPoint, hit
from turnkeep.runtime.pacing import PaceRequested
from turnkeep.runtime.payloads import TurnPaced
from turnkeep.runtime.providers.paced_calls import paced_calls
from turnkeep.runtime.providers.registry import endpoint_id
from turnkeep.runtime.signals import ModelCallCancelled
from turnkeep.runtime.states import EventType, TurnState
from turnkeep.store.errors import NotFound, Unavailable
from turnkeep.store.pacer import Bucket, Mark
from turnkeep.worker import metrics
from turnkeep.worker.ports import Resources
from turnkeep.worker.turn import TurnHandle

log = logging.getLogger(__name__)

#: a 429 that names no wait blocks the buckets this long, doubling per refusal of the
#: same call, up to the cap
REFUSAL_BACKOFF = 2.0
REFUSAL_BACKOFF_MAX = 60.0
#: how often a wait on the thread looks whether the turn is to stop
_STOP_POLL = 0.25
#: a paced session is sent again this much before its slot at most (half the hold at
#: most): its start absorbs the delivery, and the call goes at its slot, not after it
WAKE_LEAD_MAX = 0.25
#: the wall clock a booked slot is compared with (seconds since the epoch; the unit
#: tests move it, with the in-memory buckets' own)
clock = time.time


def buckets_for(ctx: Resources, agent: AgentDefinition) -> list[Bucket]:
    """The shared buckets a call of ``agent``'s model counts against (none declared:
    an empty list, found without parsing anything)."""
    found = ratelimits.applicable(ctx.settings.pacing.rate_limits, agent.provider, agent.model)
    if not found:
        return []
    endpoint = endpoint_id(agent.provider)
    return [Bucket(lim, ratelimits.bucket_id(lim, endpoint)) for lim in found]


class Pacing:
    """The model calls of one turn's attempt, paced."""

    def __init__(self, turn: TurnHandle) -> None:
        self.turn = turn

    def complete(
        self,
        agent: AgentDefinition,
        request: ModelRequest,
        step: int | None,
        call: Callable[[], ModelResponse],
    ) -> ModelResponse:
        """``call()`` once its slot came. ``step`` None (a compaction's summary call):
        any wait is on the thread, as the chunks before it would be lost otherwise."""
        buckets = buckets_for(self.turn.ctx, agent)
        if not buckets:
            return call()
        return _PacedCall(self.turn, agent, buckets, request, step).run(call)


class _PacedCall:
    def __init__(
        self,
        turn: TurnHandle,
        agent: AgentDefinition,
        buckets: list[Bucket],
        request: ModelRequest,
        step: int | None,
    ) -> None:
        self.turn, self.agent, self.buckets, self.step = turn, agent, buckets, step
        self.pacer = turn.ctx.pacer
        self.hold = turn.ctx.settings.pacing.hold
        estimate = window.request_tokens(request)
        self.tokens = ratelimits.reserved_tokens(request, estimate, agent.reserve_output)
        self.refused = 0 if step is None else pacing.refusals(turn.events, step)

    def run(self, call: Callable[[], ModelResponse]) -> ModelResponse:
        step = self.step
        booked = None if step is None else pacing.booked(self.turn.events, step)
        while True:
            if booked is not None:
                # the attempt before this one booked the slot and gave its thread back
                until_ms = round(pacing.until(booked).timestamp() * 1000)
                wait = max(0.0, until_ms / 1000 - clock())
                limit, reason, tokens = booked.limit, booked.reason, booked.tokens
                booked = None
            else:
                found = self.pacer.reserve(self.buckets, self.tokens, max_wait=self._left())
                if not found.booked:
                    raise BudgetExceeded(
                        f"the next slot of rate limit {found.limit} ({found.wait:.0f}s "
                        "ahead) is past the turn's time bound",
                        bound="max_seconds",
                        limit=self._bounds_seconds(),
                    )
                hit(FaultPoint.AFTER_RESERVATION)
                until_ms, wait, tokens = found.until_ms, found.wait, self.tokens
                limit, reason = found.limit, found.reason
                metrics.rate_limit_wait(limit or self.buckets[0].limit.name, wait)
            if step is not None and wait > self.hold:
                self._pace(step, until_ms, wait, limit, reason, tokens)
            self._sleep(wait)
            try:
                with paced_calls(self._heard):
                    reply = call()
            except ProviderRateLimited as exc:
                self.refused += 1
                for b in self.buckets:
                    metrics.rate_limited(b.limit.name)
                self.pacer.block(self.buckets, self._refusal_wait(exc.retry_after))
                log.warning("the provider refused a paced call (429): paced again")
                continue
            self._settle(tokens, reply.usage.input_tokens + reply.usage.output_tokens)
            return reply

    def _pace(
        self, step: int, until_ms: int, wait: float, limit: str, reason: str, tokens: int
    ) -> NoReturn:
        """Commit the call's pace (the attempt given back), mark the session paced for
        the scan and the API, and give the thread back."""
        turn, t = self.turn, self.turn.record
        until = datetime.fromtimestamp(until_ms / 1000, UTC).isoformat()
        data = TurnPaced(
            until=until,
            wait_ms=round(wait * 1000),
            limit=limit,
            reason=reason,
            tokens=tokens,
            refusals=self.refused or None,
        )
        turn.commit(
            TurnState.RUNNING, EventType.TURN_PACED, data.to_json(), step=step, attempt_inc=-1
        )
        hit(FaultPoint.AFTER_PACE)
        mark = Mark(turn_id=t.turn_id, step=step, until=until, limit=limit, reason=reason)
        # a lost mark only lets the scan send the session early: the journal's booked
        # slot paces it again
        ttl = wait + turn.ctx.settings.lease.ttl
        self._quietly(
            lambda: self.pacer.mark(t.tenant_id, t.session_id, mark, until_ms=until_ms, ttl=ttl)
        )
        metrics.paced(limit, reason)
        # back a moment early: the resuming attempt waits the rest out on its thread, so
        # the call goes at its slot rather than at its slot plus a delivery
        raise PaceRequested(max(0.0, wait - wake_lead(self.hold)), limit=limit)

    def _settle(self, booked: int, used: int) -> None:
        self._quietly(lambda: self.pacer.settle(self.buckets, booked, used))

    def _heard(self, headers: Mapping[str, str]) -> None:
        seconds = ratelimits.exhausted_for(headers)
        if seconds is not None:
            self._quietly(lambda: self.pacer.block(self.buckets, seconds))

    def _refusal_wait(self, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(retry_after, ratelimits.MAX_BLOCK_SECONDS)
        return min(REFUSAL_BACKOFF_MAX, REFUSAL_BACKOFF * 2.0 ** (self.refused - 1))

    def _bounds_seconds(self) -> float:
        record = self.turn.record
        return decisions.bounds(self.agent.limits, record.budget, self.turn.events).max_seconds

    def _left(self) -> float:
        """Seconds the turn's wall-clock bound leaves it."""
        elapsed = (datetime.now(UTC) - self.turn.record.created_at).total_seconds()
        return max(0.0, self._bounds_seconds() - elapsed)

    def _sleep(self, seconds: float) -> None:
        end = time.monotonic() + seconds
        while (left := end - time.monotonic()) > 0:
            if self.turn.should_stop():
                raise ModelCallCancelled("the call was stopped while it waited for its slot")
            time.sleep(min(_STOP_POLL, left))

    @staticmethod
    def _quietly(effect: Callable[[], object]) -> None:
        """A correction of the shared buckets is best effort: the call's outcome is what
        matters, and the provider's next reply corrects them again."""
        try:
            effect()
        except redis.RedisError as exc:
            log.warning("rate limit bucket not updated: %s", type(exc).__name__)


def wake_lead(hold: float) -> float:
    """How long before its slot a paced session is sent again."""
    return min(hold / 2, WAKE_LEAD_MAX)


def early(ctx: Resources, tenant_id: str, session_id: str) -> bool:
    """A delivery of a session whose head turn waits for its slot, more than
    ``TURNKEEP_PACE_HOLD`` ahead: sent again for that time (the wake may be this very
    message, come early by a clock's difference), and True: nothing more to do. A
    turn asked to stop meanwhile is let through, to be cancelled now."""
    if not ctx.settings.pacing.rate_limits:
        return False
    try:
        mark = ctx.pacer.pending(tenant_id, session_id)
    except redis.RedisError:
        return False
    if mark is None:
        return False
    left = datetime.fromisoformat(mark.until).timestamp() - clock()
    if left <= ctx.settings.pacing.hold:
        return False
    try:
        turn = ctx.store.reads.get_turn(tenant_id, session_id, mark.turn_id)
        if turn.cancel_requested or turn.state.terminal:
            return False
    except (NotFound, Unavailable):
        return False
    ctx.wake(tenant_id, session_id, left - wake_lead(ctx.settings.pacing.hold))
    return True
