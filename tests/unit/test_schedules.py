"""When a schedule's ticks fall (runtime/schedules.py): cron in a time zone, intervals
from their anchor, what a late tick does, and the ids a tick's turn takes."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from runtime.schedules import Missed, ScheduleInvalid, When, due, session_id, turn_id

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


def test_a_late_tick_runs_once_or_is_skipped_by_policy_and_the_missed_ones_never() -> None:
    every = When(every_seconds=10)
    tick = T0 + timedelta(seconds=10)
    back = tick + timedelta(minutes=5, seconds=3)  # 30 ticks passed while down
    once = due(every, tick, back, anchor=T0, missed=Missed.RUN_ONCE, grace=60)
    skip = due(every, tick, back, anchor=T0, missed=Missed.SKIP, grace=60)
    assert once.fire and not skip.fire
    assert once.next_at == skip.next_at == tick + timedelta(minutes=5, seconds=10)
    on_time = due(every, tick, tick + timedelta(seconds=1), anchor=T0, missed=Missed.SKIP, grace=60)
    assert on_time.fire and on_time.next_at == tick + timedelta(seconds=10)


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
