"""Schedules: when a schedule's ticks fall, and the ids a tick's turn is admitted under
(docs/flow-control.md). A tick's turn id is derived from the schedule and the tick, so
two beats, or a beat restarted mid-pass, admit it once: the second admission is a
replay. Cron expressions are croniter's, in the schedule's time zone; an interval is
a fixed number of seconds from the schedule's creation; a one-shot (``at``) ticks once
(a turn's follow-up is one: runtime/followups.py).

Pure: the store keeps the rows (store/schedules.py), recovery/schedules.py fires them.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
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
        return next(self.cron_ticks(at))

    def cron_ticks(self, at: datetime) -> Iterator[datetime]:
        """The cron's ticks strictly after ``at``, in UTC, each wall-clock time once.

        croniter walks the zone's clock: a time that repeats when summer time ends
        (01:30 twice) it gives twice, one an hour after the other; the second is
        passed over, so a daily 01:30 fires at the first. A time the clock skips when
        summer time starts croniter gives at the change (02:30 -> 03:00 new time),
        once, which is kept."""
        assert self.cron is not None
        zone = ZoneInfo(self.timezone)
        local = at.astimezone(zone)
        shown = local.replace(tzinfo=None)  # the latest wall-clock time passed
        walk = croniter(self.cron, local)
        while True:
            nxt: datetime = walk.get_next(datetime)
            wall = nxt.astimezone(zone).replace(tzinfo=None)
            if wall <= shown:  # this wall-clock time showed already (the clock fell back)
                continue
            shown = wall
            yield nxt.astimezone(UTC)


#: the most ticks one pass admits for one schedule: a pass late by many intervals
#: admits the rest on the next passes, so an outage never floods the lanes at once
TICKS_PER_PASS = 20
#: a cron's ticks skipped past the grace are counted one by one up to this many (a
#: 1-minute cron down for a week); past it the count stops there and the jump is made
COUNT_CAP = 10_000


@dataclass(frozen=True)
class Firing:
    """One step of a pass over a due schedule: the tick it waits for (the
    compare-and-swap), whether that tick's turn is admitted, the tick it waits for
    after, and how many ticks between the two were skipped (past the grace)."""

    tick: datetime
    fire: bool
    #: None: a one-shot, done
    next_at: datetime | None
    #: ticks passed over, the unfired ``tick`` itself included
    skipped: int = 0


def firings(
    when: When,
    tick: datetime,
    now: datetime,
    *,
    anchor: datetime,
    missed: Missed,
    grace: float,
    limit: int = TICKS_PER_PASS,
) -> list[Firing]:
    """What a pass at ``now`` does with a schedule waiting for ``tick`` (at or before
    ``now``): every tick up to ``now`` within ``grace`` seconds is fired, in order, at
    most ``limit`` of them (the rest stay due). Ticks more than ``grace`` late (only
    the first ones can be) are skipped in one step and counted, except that with
    ``Missed.RUN_ONCE`` the first of them fires once."""
    steps: list[Firing] = []
    horizon = now - timedelta(seconds=grace)
    t: datetime | None = tick
    if tick < horizon:
        resume = when.next_after(horizon - _INSTANT, anchor=anchor)  # first within grace
        between = _count_between(when, tick, resume, anchor=anchor)
        fire = missed is Missed.RUN_ONCE
        steps.append(Firing(tick, fire=fire, next_at=resume, skipped=between + int(not fire)))
        t = resume
    while t is not None and t <= now and len(steps) < limit:
        nxt = when.next_after(t, anchor=anchor)
        steps.append(Firing(t, fire=True, next_at=nxt))
        t = nxt
    return steps


#: the smallest step of a datetime: "at or after x" is "after x less this"
_INSTANT = timedelta(microseconds=1)


def _count_between(when: When, tick: datetime, resume: datetime | None, *, anchor: datetime) -> int:
    """How many ticks fall strictly between ``tick`` and ``resume`` (None: none come)."""
    if resume is None or when.once:
        return 0
    if when.every_seconds is not None:  # whole intervals apart
        return max(0, round((resume - tick).total_seconds() / when.every_seconds) - 1)
    before = itertools.takewhile(lambda t: t < resume, when.cron_ticks(tick))
    return sum(1 for _ in itertools.islice(before, COUNT_CAP))


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
