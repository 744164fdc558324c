"""A turn's waits on provider rate limits, as its journal tells them (pure).

A model call whose slot under its rate limits (runtime/ratelimits.py) is further
ahead than a worker holds a thread for commits ``turn.paced``: the step, the time
its slot comes (``until``), the limit and why. The attempt ends there, giving its
attempt back (the attempt cap counts attempts that did not end in a pace), and the
session is sent again for that time (worker/pace.py). The attempt that resumes
finds the pace as the last thing the journal says before its own start: the slot is
its own, booked already, and the call goes at ``until`` without booking another.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from turnkeep.runtime.journal import JournalEntry
from turnkeep.runtime.payloads import TurnPaced
from turnkeep.runtime.signals import Signal
from turnkeep.runtime.states import EventType

#: events that may come between a pace and the start of the attempt that resumes it
_BETWEEN = frozenset({EventType.TURN_STARTED, EventType.TURN_CANCEL_REQUESTED})


class PaceRequested(Signal):
    """Raised once a call's pace is committed (``turn.paced``): the lane gives back its
    lease and thread, and the session is sent again in ``seconds`` (never an error)."""

    def __init__(self, seconds: float, *, limit: str = "") -> None:
        super().__init__(f"paced for {seconds:.3f}s by {limit or 'a rate limit'}")
        self.seconds = max(0.0, seconds)
        self.limit = limit


def booked(events: Sequence[JournalEntry], step: int) -> TurnPaced | None:
    """The pace of ``step`` the attempt before this one ended with: its slot is booked
    (None when this attempt resumes anything else, and must book its own)."""
    for e in reversed(events):
        if e.type in _BETWEEN:
            continue
        if e.type == EventType.TURN_PACED and e.step == step:
            return TurnPaced.from_json(e.data)
        return None
    return None


def refusals(events: Sequence[JournalEntry], step: int) -> int:
    """How many times the provider refused ``step``'s call for its rate limit (a 429)
    before the latest pace: the backoff of a refusal that names no wait grows with it."""
    for e in reversed(events):
        if e.type == EventType.TURN_PACED and e.step == step:
            return TurnPaced.from_json(e.data).refusals or 0
    return 0


def paced_now(events: Sequence[JournalEntry], now: datetime | None = None) -> TurnPaced | None:
    """The pace a turn waits out now: its journal ends with it and its time is ahead."""
    for e in reversed(events):
        if e.type == EventType.TURN_CANCEL_REQUESTED:
            continue
        if e.type != EventType.TURN_PACED:
            return None
        pace = TurnPaced.from_json(e.data)
        return pace if until(pace) > (now or datetime.now(UTC)) else None
    return None


def until(pace: TurnPaced) -> datetime:
    """When the paced call's slot comes."""
    return datetime.fromisoformat(pace.until)
