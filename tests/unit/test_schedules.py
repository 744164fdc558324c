"""When a schedule's ticks fall (runtime/schedules.py): cron in a time zone (a wall-clock
time that repeats or vanishes at a change of offset fires once), intervals from their
anchor, what a late pass admits (every tick within the grace, in order, a bounded
number per pass; the ones past it counted), and the ids a tick's turn takes."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from turnkeep.runtime.schedules import (
    Firing,
    Missed,
    ScheduleInvalid,
    When,
    firings,
    session_id,
    turn_id,
)

T0 = datetime(2026, 12, 3, 6, 30, tzinfo=UTC)


@pytest.mark.parametrize(
    ("when", "where"),
    [
        (When(), "body"),
        (When(cron="0 7 * * *", every_seconds=60), "body"),
        (When(cron="not a cron"), "body.cron"),
        (When(cron="0 7 * * *", timezone="Mars/Olympus"), "body.timezone"),
        (When(every_seconds=0.5), "body.every_seconds"),
    ],
)
def test_a_schedule_that_cannot_fire_is_refused(when: When, where: str) -> None:
    with pytest.raises(ScheduleInvalid) as refused:
        when.check()
    assert refused.value.where == where


def test_cron_ticks_fall_in_the_schedules_time_zone() -> None:
    every_morning = When(cron="0 7 * * *", timezone="America/New_York")
    every_morning.check()
    nxt = every_morning.next_after(T0, anchor=T0)
    assert nxt == datetime(2026, 12, 3, 12, 0, tzinfo=UTC)  # 07:00 EST
    assert every_morning.next_after(nxt, anchor=T0) == nxt + timedelta(days=1)


def test_interval_ticks_fall_at_whole_intervals_from_the_anchor() -> None:
    every = When(every_seconds=10)
    assert every.next_after(T0, anchor=T0) == T0 + timedelta(seconds=10)
    assert every.next_after(T0 + timedelta(seconds=25), anchor=T0) == T0 + timedelta(seconds=30)
    assert every.next_after(T0 + timedelta(seconds=30), anchor=T0) == T0 + timedelta(seconds=40)


def test_a_tick_missed_past_the_grace_runs_once_or_is_skipped_and_the_rest_are_counted() -> None:
    every = When(every_seconds=10)
    tick = T0 + timedelta(seconds=10)
    back = tick + timedelta(minutes=5, seconds=3)  # 31 ticks passed while down
    once = firings(every, tick, back, anchor=T0, missed=Missed.RUN_ONCE, grace=60)
    skip = firings(every, tick, back, anchor=T0, missed=Missed.SKIP, grace=60)
    # the first tick within the grace (60 s before ``back``) is tick + 4 min 10 s
    first_in_grace = tick + timedelta(minutes=4, seconds=10)
    assert once[0] == Firing(tick, fire=True, next_at=first_in_grace, skipped=24)
    assert skip[0] == Firing(tick, fire=False, next_at=first_in_grace, skipped=25)
    # then every tick within the grace, in order, each fired
    for plan in (once, skip):
        assert [f.tick for f in plan[1:]] == [
            first_in_grace + timedelta(seconds=10 * i) for i in range(6)
        ]
        assert all(f.fire and f.skipped == 0 for f in plan[1:])
        assert plan[-1].next_at == tick + timedelta(minutes=5, seconds=10)
    on_time = firings(
        every, tick, tick + timedelta(seconds=1), anchor=T0, missed=Missed.SKIP, grace=60
    )
    assert on_time == [Firing(tick, fire=True, next_at=tick + timedelta(seconds=10))]


def test_a_late_pass_admits_every_tick_within_the_grace_in_order() -> None:
    """Issue 37: a pass 35 s after a tick of a 5-second schedule admitted that tick and
    jumped past now, so six ticks were never admitted and none was counted skipped."""
    every = When(every_seconds=5)
    tick = T0 + timedelta(seconds=5)
    plan = firings(
        every, tick, tick + timedelta(seconds=35), anchor=T0, missed=Missed.SKIP, grace=60
    )
    assert [f.tick for f in plan] == [tick + timedelta(seconds=5 * i) for i in range(8)]
    assert all(f.fire and f.skipped == 0 for f in plan)
    assert [f.next_at for f in plan[:-1]] == [f.tick for f in plan[1:]]
    assert plan[-1].next_at == tick + timedelta(seconds=40)


def test_a_pass_admits_a_bounded_number_of_ticks_and_leaves_the_rest_due() -> None:
    every = When(every_seconds=1)
    plan = firings(
        every, T0, T0 + timedelta(seconds=50), anchor=T0, missed=Missed.SKIP, grace=60, limit=20
    )
    assert len(plan) == 20 and all(f.fire for f in plan)
    assert plan[-1].next_at == T0 + timedelta(seconds=20)  # due: the next pass goes on


def test_a_wall_clock_time_repeated_when_summer_time_ends_fires_once() -> None:
    """America/New_York falls back on 2026-11-01: 01:30 happens at 05:30 and 06:30 UTC."""
    daily = When(cron="30 1 * * *", timezone="America/New_York")
    first = daily.next_after(datetime(2026, 10, 31, 12, tzinfo=UTC), anchor=T0)
    assert first == datetime(2026, 11, 1, 5, 30, tzinfo=UTC)  # 01:30 EDT, the first one
    assert daily.next_after(first, anchor=T0) == datetime(2026, 11, 2, 6, 30, tzinfo=UTC)
    # a quarter-hourly one shows each wall-clock time of the repeated hour once
    quarterly = When(cron="*/15 * * * *", timezone="Europe/Lisbon")
    at = datetime(2026, 10, 25, 0, 0, tzinfo=UTC)  # 01:00 WEST; 02:00 WEST -> 01:00 WET
    seen = []
    for _ in range(8):
        nxt = quarterly.next_after(at, anchor=T0)
        assert nxt is not None and nxt > at
        seen.append(nxt.astimezone(ZoneInfo("Europe/Lisbon")).strftime("%H:%M"))
        at = nxt
    assert seen == ["01:15", "01:30", "01:45", "02:00", "02:15", "02:30", "02:45", "03:00"]
    plan = firings(
        daily,
        datetime(2026, 11, 1, 5, 30, tzinfo=UTC),
        datetime(2026, 11, 1, 6, 30, 1, tzinfo=UTC),
        anchor=T0,
        missed=Missed.SKIP,
        grace=7200,
    )
    assert [f.tick for f in plan] == [datetime(2026, 11, 1, 5, 30, tzinfo=UTC)]


def test_a_wall_clock_time_skipped_when_summer_time_starts_fires_once_at_the_change() -> None:
    """America/New_York springs forward on 2026-03-08: 02:00 EST becomes 03:00 EDT, so
    02:30 never shows on the clock; it fires once, at the change (07:00 UTC)."""
    daily = When(cron="30 2 * * *", timezone="America/New_York")
    first = daily.next_after(datetime(2026, 3, 7, 12, tzinfo=UTC), anchor=T0)
    assert first == datetime(2026, 3, 8, 7, 0, tzinfo=UTC)
    assert daily.next_after(first, anchor=T0) == datetime(2026, 3, 9, 6, 30, tzinfo=UTC)
    lisbon = When(cron="30 1 * * *", timezone="Europe/Lisbon")  # 01:00 WET -> 02:00 WEST
    first = lisbon.next_after(datetime(2026, 3, 28, 12, tzinfo=UTC), anchor=T0)
    assert first == datetime(2026, 3, 29, 1, 0, tzinfo=UTC)
    assert lisbon.next_after(first, anchor=T0) == datetime(2026, 3, 30, 0, 30, tzinfo=UTC)


def test_ticks_a_cron_skips_past_the_grace_are_counted() -> None:
    hourly = When(cron="0 * * * *", timezone="UTC")
    tick = datetime(2026, 12, 1, 0, 0, tzinfo=UTC)
    back = datetime(2026, 12, 2, 0, 30, tzinfo=UTC)  # 25 ticks passed while down
    plan = firings(hourly, tick, back, anchor=T0, missed=Missed.SKIP, grace=3600)
    assert plan[0] == Firing(
        tick, fire=False, next_at=datetime(2026, 12, 2, tzinfo=UTC), skipped=24
    )
    assert [f.tick for f in plan[1:]] == [datetime(2026, 12, 2, tzinfo=UTC)]
    assert plan[1].fire and plan[1].next_at == datetime(2026, 12, 2, 1, tzinfo=UTC)


def test_a_ticks_ids_are_the_schedule_and_the_tick() -> None:
    tick = T0 + timedelta(seconds=10)
    assert turn_id("daily", tick) == f"sched.daily.{int(tick.timestamp() * 1000)}"
    # whole intervals from an anchor with microseconds: ids 2,000 ms apart, exactly
    anchor = T0 + timedelta(microseconds=571_500)
    every = When(every_seconds=2)
    a = every.next_after(anchor, anchor=anchor)
    b = every.next_after(a, anchor=anchor)
    assert int(turn_id("x", b).rsplit(".", 1)[1]) - int(turn_id("x", a).rsplit(".", 1)[1]) == 2000
    assert session_id("daily", tick, None) == turn_id("daily", tick)
    assert session_id("daily", tick, "s-1") == "s-1"
