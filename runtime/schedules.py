"""Schedules: when a schedule's ticks fall, and the ids a tick's turn is admitted under
(docs/flow-control.md). A tick's turn id is derived from the schedule and the tick, so
two beats, or a beat restarted mid-pass, admit it once: the second admission is a
replay. Cron expressions are croniter's, in the schedule's time zone; an interval is
a fixed number of seconds from the schedule's creation; a one-shot (``at``) ticks once
(a turn's follow-up is one: runtime/followups.py).

Pure: the store keeps the rows (store/schedules.py), recovery/schedules.py fires them.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import croniter

#: the shortest interval a schedule may have, and the longest
MIN_EVERY_SECONDS = 1.0
MAX_EVERY_SECONDS = 366 * 24 * 3600.0


class Missed(StrEnum):
    """What a tick does that passed while nothing fired it (everything was down)."""

    #: the first missed tick runs once on return; the ones after it are not run
    RUN_ONCE = "run_once"
    #: missed ticks are not run; the next one on time is
    SKIP = "skip"


class ScheduleInvalid(ValueError):
    """A schedule that cannot be fired: ``where`` names the field."""

    def __init__(self, where: str, message: str) -> None:
        super().__init__(message)
        self.where = where
        self.message = message


@dataclass(frozen=True)
class When:
    """A schedule's timing: a cron expression in a time zone, every N seconds, or once
    at a time (``at``; stored as neither, its tick the schedule's ``next_at``)."""

    cron: str | None = None
    every_seconds: float | None = None
    timezone: str = "UTC"
    at: datetime | None = None

    @property
    def once(self) -> bool:
        return self.cron is None and self.every_seconds is None

    def check(self) -> None:
        """``ScheduleInvalid`` unless exactly one of cron, interval and time is given,
        the cron expression parses, the time is aware and the time zone is known."""
        given = [x is not None for x in (self.cron, self.every_seconds, self.at)]
        if sum(given) != 1:
            raise ScheduleInvalid("body", "give exactly one of cron, every_seconds and at")
        if self.at is not None and (self.at.tzinfo is None or self.at.utcoffset() is None):
            raise ScheduleInvalid("body.at", "a time with its offset (e.g. ...Z)")
        try:
            ZoneInfo(self.timezone)
        except (ZoneInfoNotFoundError, ValueError):
            raise ScheduleInvalid("body.timezone", f"no time zone {self.timezone!r}") from None
        if self.cron is not None and not croniter.is_valid(self.cron):
            raise ScheduleInvalid("body.cron", f"not a cron expression: {self.cron!r}")
        if self.every_seconds is not None and not (
            MIN_EVERY_SECONDS <= self.every_seconds <= MAX_EVERY_SECONDS
        ):
            raise ScheduleInvalid(
                "body.every_seconds",
                f"must be between {MIN_EVERY_SECONDS:g} and {MAX_EVERY_SECONDS:g}",
            )

    def first(self, now: datetime) -> datetime:
        """A new schedule's first tick: a one-shot's time (past or not: it fires on the
        next pass), else the first tick after ``now``."""
        if self.at is not None:
            return self.at.astimezone(UTC)
        nxt = self.next_after(now, anchor=now)
        assert nxt is not None
        return nxt

    def next_after(self, at: datetime, *, anchor: datetime) -> datetime | None:
        """The first tick strictly after ``at`` (an interval's ticks fall at ``anchor``
        plus whole intervals); None for a one-shot, whose one tick came."""
        if self.once:
            return None
        if self.every_seconds is not None:
            every = self.every_seconds
            n = int((at - anchor).total_seconds() // every) + 1
            tick = anchor + timedelta(seconds=n * every)
            while tick <= at:  # float rounding at a boundary
                tick += timedelta(seconds=every)
            return tick.astimezone(UTC)
        assert self.cron is not None
        local = at.astimezone(ZoneInfo(self.timezone))
        nxt: datetime = croniter(self.cron, local).get_next(datetime)
        return nxt.astimezone(UTC)


@dataclass(frozen=True)
class Firing:
    """What a pass does with a due schedule: admit the tick's turn (``fire``), and the
    tick the schedule waits for after it."""

    fire: bool
    #: None: a one-shot, done
    next_at: datetime | None


def due(
    when: When, tick: datetime, now: datetime, *, anchor: datetime, missed: Missed, grace: float
) -> Firing:
    """The due ``tick`` (the schedule's stored next one, at or before ``now``): fired,
    unless it is more than ``grace`` seconds late and missed ticks are skipped. The next
    tick is the first after ``now``: the ticks missed after this one never run."""
    late = (now - tick).total_seconds() > grace
    return Firing(
        fire=not (late and missed is Missed.SKIP), next_at=when.next_after(now, anchor=anchor)
    )


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def tick_key(tick: datetime) -> str:
    """A tick as it goes into ids: UTC milliseconds since the epoch, in integer
    arithmetic (a float's rounding would make two ticks of one interval differ by 1 ms)."""
    return str((tick - _EPOCH) // timedelta(milliseconds=1))


def turn_id(schedule_id: str, tick: datetime) -> str:
    return f"sched.{schedule_id}.{tick_key(tick)}"


def session_id(schedule_id: str, tick: datetime, target: str | None) -> str:
    """The schedule's target session, or a new session per tick."""
    return target if target is not None else turn_id(schedule_id, tick)
