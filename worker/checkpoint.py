"""Checkpoints: one fenced compare-and-swap commit per step, then a publish.

A commit whose connection dropped has an unknown outcome. The retry first asks
Postgres whether the commit landed (the turn's revision moved by one and the newest
events under our fence are ours, by type and step) so it recognises its own
committed row instead of mistaking it for a lost lease.

Every commit is redacted here, the one place all of a turn's writes pass (the event
data, result, error and pending input: runtime/obs/redact.py), so what is stored, and
the committed events published from it, never holds a secret.

A commit Postgres refuses (``LeaseLost``: a newer fence was accepted, or the turn's
revision moved on) is counted in ``turnkeep_stale_fence_rejections_total``
(worker/metrics.py) on its way up.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Mapping
from dataclasses import replace
from typing import Any

from turnkeep.runtime.obs.faults import FaultPoint, hit
from turnkeep.runtime.obs.redact import Redactor
from turnkeep.runtime.payloads import ContextCompacted, ModelCompleted
from turnkeep.runtime.states import EventType
from turnkeep.store.errors import LeaseLost, NotFound, Unavailable
from turnkeep.store.records import Appended
from turnkeep.store.step_commit import StepCommit
from turnkeep.worker import metrics
from turnkeep.worker.ports import EventSink, LeaseCheck, StepStore

log = logging.getLogger(__name__)


class Checkpointer:
    """Writes one session's steps under one fence."""

    def __init__(
        self, store: StepStore, publisher: EventSink, heartbeat: LeaseCheck, redactor: Redactor
    ) -> None:
        self.store = store
        self.publisher = publisher
        self.heartbeat = heartbeat
        self.redactor = redactor
        self.lease = heartbeat.lease

    def commit(self, commit: StepCommit) -> Appended:
        """Commit one step (and, with its ``then``, the terminal event after it);
        ``LeaseLost`` when the fence or revision moved on. Its provider state is
        written beside its event (never in it)."""
        self.heartbeat.check()
        then = commit.then
        hit(FaultPoint.BEFORE_SETTLE if then is not None else FaultPoint.BEFORE_COMMIT)
        red = self.redactor.redact_json
        # the provider state is redacted like the rest: a block a secret was cut from
        # no longer matches its signature and is not sent back (runtime/messages.py
        # meta_blocks)
        data = red(commit.data)
        commit = replace(
            commit,
            data=data,
            result=red(commit.result),
            error=red(commit.error),
            pending_input=red(commit.pending_input),
            provider_state=red(commit.provider_state),
            then=None if then is None else (then[0], red(then[1])),
            usage=usage_of(commit.type, data),
        )
        turn_id, revision, type, step = commit.turn_id, commit.revision, commit.type, commit.step
        then = commit.then
        expect = [(type, step)] + ([(then[0], None)] if then is not None else [])
        delays = backoff()
        while True:
            try:
                lease = self.lease
                appended = self.store.turns.append(
                    lease.tenant_id, lease.session_id, lease.fence, commit
                )
                break
            except LeaseLost:
                metrics.STALE_FENCE_REJECTIONS.inc()
                raise
            except Unavailable:
                log.warning("checkpoint commit failed: postgres unavailable; retrying")
            landed = self._ask_until_known(turn_id, revision, expect, delays)
            if landed is not None:
                appended = landed
                break
        hit(FaultPoint.AFTER_SETTLE if then is not None else FaultPoint.AFTER_COMMIT)
        self.publisher.committed(*appended.events)
        return appended

    def _ask_until_known(
        self,
        turn_id: str,
        revision: int,
        expect: list[tuple[EventType, int | None]],
        delays: Iterator[float],
    ) -> Appended | None:
        """The commit's outcome is unknown: ask until Postgres tells whether it landed,
        and never write again on a "cannot tell"."""
        while True:
            time.sleep(next(delays))
            # never retry past the point where the lease could have expired
            self.heartbeat.check()
            try:
                return self._landed(turn_id, revision, expect)
            except Unavailable:
                continue

    def _landed(
        self, turn_id: str, revision: int, expect: list[tuple[EventType, int | None]]
    ) -> Appended | None:
        """Our landed commit, or None when it did not land. ``Unavailable``: cannot tell."""
        tenant_id, session_id = self.lease.tenant_id, self.lease.session_id
        try:
            turn = self.store.reads.get_turn(tenant_id, session_id, turn_id)
        except NotFound:  # its session was erased meanwhile: nothing of ours stands
            return None
        if turn.revision != revision + 1:
            return None
        events = self.store.reads.turn_events(tenant_id, session_id, turn_id)
        # the newest events *we* wrote: a cancel request (fence 0) may have been
        # committed after ours, and must not hide them
        ours = [e for e in events if e.fence == self.lease.fence][-len(expect) :]
        if [(e.type, e.step) for e in ours] != [(t.value, s) for t, s in expect]:
            return None
        log.info("a checkpoint whose commit reply was lost had landed; going on")
        # a settled turn's lane is re-read by the next task: say "runnable" so this
        # one looks (a rare path, worth one start statement)
        return Appended(
            revision=turn.revision,
            attempt=turn.attempt,
            cancel_requested=turn.cancel_requested,
            events=tuple(ours),
            lane_runnable=turn.state.terminal,
        )


def backoff(first: float = 0.05, cap: float = 1.0) -> Iterator[float]:
    """Delays between asks while a statement's outcome is unknown: doubling, capped."""
    delay = first
    while True:
        yield delay
        delay = min(delay * 2, cap)


#: the steps that call a model, whose tokens and cost the turn and session add up
_MODEL_STEPS = frozenset({EventType.MODEL_COMPLETED, EventType.CONTEXT_COMPACTED})


def usage_of(type: EventType, data: Mapping[str, Any]) -> dict[str, float] | None:
    """What a step adds to its turn's and session's usage: a model call's tokens and
    its charged cost (its own, twice or more when a crash cut an earlier try of the
    same call short: ``charged_cost``), in the step's own statement."""
    if type not in _MODEL_STEPS:
        return None
    step = (
        ModelCompleted.from_json(data)
        if type == EventType.MODEL_COMPLETED
        else ContextCompacted.from_json(data)
    )
    used = step.usage or {}
    out: dict[str, float] = {
        "input_tokens": int(used.get("input_tokens", 0)),
        "output_tokens": int(used.get("output_tokens", 0)),
    }
    cost = step.charged_cost if step.has("charged_cost") else step.cost
    if isinstance(cost, int | float):
        out["cost_usd"] = float(cost)
    return out
