"""Follow-up turns (runtime/followups.py, docs/flow-control.md) with real workers and a
real beat: a tool call schedules a turn of its session for later (the ``reminder``
agent's declared ``follow_up`` tool); it is a one-shot schedule, listed with the turn
and step it came from, holding no worker and no lease; beat admits its turn at its
time through the ordinary admission, once; deleting the schedule cancels it; a worker
killed right after the tool made it leaves one schedule and one follow-up turn."""

from __future__ import annotations

import signal
import uuid
from datetime import UTC, datetime
from typing import Any

import pytest
import redis

from tests.procs import wait_for
from turnkeep.runtime.schedules import turn_id
from turnkeep.runtime.states import TurnState
from turnkeep.store.keys import lease_key

pytestmark = pytest.mark.timeout(180)

#: beat fires due schedules this often (TURNKEEP_SCHEDULE_INTERVAL)
BEAT = {"TURNKEEP_SCHEDULE_INTERVAL": "0.5"}


def _followups(store: Any, tenant: str, sid: str) -> list[Any]:
    return [
        s
        for s in store.schedules.list_schedules(tenant, limit=100)
        if s.origin is not None and s.origin["session_id"] == sid
    ]


def _followup_turn(store: Any, tenant: str, sid: str, schedule: Any) -> Any:
    """The turn the one-shot's tick admitted (runtime/schedules.py ``turn_id``)."""
    return store.reads.get_turn(tenant, sid, turn_id(schedule.schedule_id, schedule.last_tick))


def test_a_tool_schedules_a_follow_up_turn_that_runs_once_at_its_time(
    procs, client, store, tenant, sid
):
    procs.beat(BEAT)
    procs.worker()
    asked = datetime.now(UTC)
    tid = client.admit(tenant, sid, "reminder", "later:3:check the build again")
    first = client.wait_terminal(tenant, sid, tid)
    assert first.state is TurnState.COMPLETED, first.error

    [made] = _followups(store, tenant, sid)
    assert first.result["text"].startswith("scheduled: ")
    assert made.schedule_id in first.result["text"]
    # a one-shot of this session, from this turn's step 2, by the turn's submitter
    assert (made.cron, made.every_seconds, made.session_id) == (None, None, sid)
    assert made.origin == {"session_id": sid, "turn_id": tid, "step": 2}
    assert made.created_by == "chaos" and made.agent_name == "reminder"
    assert made.input == {"messages": [{"role": "user", "content": "check the build again"}]}
    assert made.next_at is not None and 2.5 <= (made.next_at - asked).total_seconds() <= 10
    # nothing holds the session while it waits: no lease, no active turn
    r = redis.Redis.from_url(procs.env["TURNKEEP_REDIS_URL"])
    assert not r.exists(lease_key(tenant, sid))
    assert [t.state.terminal for t in store.reads.list_turns(tenant, sid)] == [True]

    def fired() -> Any:
        s = store.schedules.get_schedule(tenant, made.schedule_id)
        return s if s.fired == 1 else None

    done = wait_for(fired, 30, interval=0.2, what="the follow-up's schedule fired")
    assert done.next_at is None and done.last_tick == made.next_at  # a one-shot: done
    follow = _followup_turn(store, tenant, sid, done)
    follow = client.wait_terminal(tenant, sid, follow.turn_id)
    assert follow.state is TurnState.COMPLETED, follow.error
    assert follow.result == {"text": "followed up: check the build again"}
    assert follow.created_at >= made.next_at
    # once: the schedule is due no more, the session holds the two turns
    assert made.schedule_id not in [
        s.schedule_id for s in store.schedules.due_schedules(limit=1000)
    ]
    assert len(store.reads.list_turns(tenant, sid)) == 2


def test_a_deleted_follow_up_never_runs(procs, client, store, tenant, sid):
    procs.beat(BEAT)
    procs.worker()
    tid = client.admit(tenant, sid, "reminder", "later:2:never mind")
    assert client.wait_terminal(tenant, sid, tid).state is TurnState.COMPLETED
    [made] = _followups(store, tenant, sid)
    store.schedules.delete_schedule(tenant, made.schedule_id)  # what DELETE /v1/schedules/{id} runs

    # a marker due after it: once the marker's turn ran, the deleted one would have too
    other = f"m-{uuid.uuid4().hex[:8]}"
    marker = client.admit(tenant, other, "reminder", "later:3:the marker")
    assert client.wait_terminal(tenant, other, marker).state is TurnState.COMPLETED
    [mark] = _followups(store, tenant, other)
    wait_for(
        lambda: store.schedules.get_schedule(tenant, mark.schedule_id).fired == 1,
        30,
        what="the marker fired",
    )
    assert _followups(store, tenant, sid) == []
    assert [t.turn_id for t in store.reads.list_turns(tenant, sid)] == [tid]


def test_a_worker_killed_after_the_tool_made_it_leaves_one_follow_up(
    procs, client, store, tenant, sid
):
    procs.beat(BEAT)
    victim = procs.worker(
        {"TURNKEEP_FAULTS": "after_tool_effect=kill-once", "TURNKEEP_FAULTS_SESSIONS": sid}
    )
    tid = client.admit(tenant, sid, "reminder", "later:4:once only")
    wait_for(lambda: not victim.alive(), 30, what="the worker SIGKILLed after the tool")
    assert victim.popen.returncode == -signal.SIGKILL
    [made] = _followups(store, tenant, sid)  # the tool made it, its step not committed

    procs.worker()
    first = client.wait_terminal(tenant, sid, tid, timeout=60)
    assert first.state is TurnState.COMPLETED, first.error
    assert first.attempt == 2
    # the rerun of the call found the schedule its first run made: one, at its time
    # (still due then, or, on a machine slow to recover the turn, fired at that tick)
    [again] = _followups(store, tenant, sid)
    assert again.schedule_id == made.schedule_id
    assert made.next_at in (again.next_at, again.last_tick), (again, made)
    assert made.schedule_id in first.result["text"]
    wait_for(
        lambda: store.schedules.get_schedule(tenant, made.schedule_id).fired == 1,
        30,
        what="the follow-up fired",
    )
    follow = _followup_turn(
        store, tenant, sid, store.schedules.get_schedule(tenant, made.schedule_id)
    )
    assert client.wait_terminal(tenant, sid, follow.turn_id).result == {
        "text": "followed up: once only"
    }
