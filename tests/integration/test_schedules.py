"""Schedules over real HTTP, fired by real beats and workers (issue 26, docs/flow-control.md):
created idempotently and validated, scoped by tenant, paused and resumed; with two
beats running, each tick's turn is admitted exactly once and the ticks follow one
another without a gap; a tick missed while everything was down runs once on return
(or not at all, by the schedule's policy)."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest

from tests.integration.api_server import Api, serve_api
from tests.invariants import check_all
from tests.procs import wait_for
from turnkeep.recovery.schedules import fire_once
from turnkeep.runtime import schedules
from turnkeep.runtime.agents.registry import load_agents
from turnkeep.runtime.states import TurnState

BODY = {"agent": "demo", "input": [{"role": "user", "content": "Weather in Lisbon?"}]}


@pytest.fixture(scope="module")
def api(service_env: dict[str, str]) -> Iterator[Api]:
    with serve_api(
        service_env, agents="tests.agents", broker_url=service_env["TURNKEEP_REDIS_URL"]
    ) as handle:
        yield handle


def test_schedules_are_created_once_validated_and_the_tenants_own(api: Api, sid: str) -> None:
    c = api.client()
    body = {**BODY, "schedule_id": f"daily-{sid}", "cron": "0 7 * * *", "timezone": "Europe/Lisbon"}
    r = c.post("/v1/schedules", json=body)
    assert r.status_code == 201, r.text
    made = r.json()
    assert (made["cron"], made["timezone"], made["paused"], made["fired"]) == (
        "0 7 * * *",
        "Europe/Lisbon",
        False,
        0,
    )
    assert datetime.fromisoformat(made["next_at"]).astimezone(UTC).minute == 0
    assert r.headers["location"] == f"/v1/schedules/daily-{sid}"
    assert c.post("/v1/schedules", json=body).status_code == 200  # a replay
    other = c.post("/v1/schedules", json={**body, "cron": "0 8 * * *"})
    assert other.status_code == 409 and other.json()["code"] == "idempotency_conflict"
    bad = [
        ({**BODY, "cron": "every morning"}, "cron"),
        ({**BODY, "cron": "0 7 * * *", "timezone": "Mars/Olympus"}, "timezone"),
        ({**BODY, "cron": "0 7 * * *", "every_seconds": 5}, None),
        ({**BODY, "every_seconds": 0.1}, "every_seconds"),
        ({**BODY, "agent": "nobody", "every_seconds": 5}, None),
    ]
    for wrong, field in bad:
        r = c.post("/v1/schedules", json=wrong)
        assert r.status_code == 422, (wrong, r.text)
        if field is not None:
            assert r.json()["errors"][0]["loc"][-1] == field, r.json()
    # another tenant sees none of it; a reader may not write
    assert api.client("b").get(f"/v1/schedules/daily-{sid}").status_code == 404
    assert api.client("b").delete(f"/v1/schedules/daily-{sid}").status_code == 404
    assert f"daily-{sid}" not in [
        s["schedule_id"] for s in api.client("b").get("/v1/schedules").json()["schedules"]
    ]
    assert (
        api.client("a-reader").post("/v1/schedules", json=BODY | {"every_seconds": 5}).status_code
        == 403
    )
    listed = c.get("/v1/schedules", params={"limit": 500}).json()["schedules"]
    assert f"daily-{sid}" in [s["schedule_id"] for s in listed]
    paused = c.post(f"/v1/schedules/daily-{sid}/pause").json()
    assert paused["paused"] is True
    resumed = c.post(f"/v1/schedules/daily-{sid}/resume").json()
    assert resumed["paused"] is False
    assert datetime.fromisoformat(resumed["next_at"]) > datetime.now(UTC)
    assert c.delete(f"/v1/schedules/daily-{sid}").status_code == 204
    assert c.get(f"/v1/schedules/daily-{sid}").status_code == 404


def _two_beats_fire_each_tick_once(
    api: Api, procs: Any, store: Any, sid: str, database_url: str, *, every: int, ticks: int
) -> None:
    """Two beats fire a schedule of a tick every ``every`` seconds until ``ticks`` fired:
    one turn per tick, every tick between the first and the last, none twice."""
    fast = {"TURNKEEP_SCHEDULE_INTERVAL": "0.3"}
    procs.beat(fast)
    procs.beat(fast)
    procs.worker()
    c = api.client()
    body = {**BODY, "schedule_id": f"tick-{sid}", "every_seconds": every, "session_id": sid}
    assert c.post("/v1/schedules", json=body).status_code == 201
    wait_for(
        lambda: c.get(f"/v1/schedules/tick-{sid}").json()["fired"] >= ticks,
        every * ticks + 60,
        interval=0.2,
        what=f"{ticks} ticks fired",
    )
    stopped = c.post(f"/v1/schedules/tick-{sid}/pause").json()
    turns = store.reads.list_turns(api.tenant_a, sid)
    fired = sorted(int(t.turn_id.rsplit(".", 1)[1]) for t in turns)
    assert len(fired) == len(set(fired)) == stopped["fired"] >= ticks
    assert all(b - a == every * 1000 for a, b in itertools.pairwise(fired)), fired
    assert all(t.submitted_by == "alice" and t.agent_name == "demo" for t in turns)

    def settled() -> bool:
        return all(t.state.terminal for t in store.reads.list_turns(api.tenant_a, sid))

    wait_for(settled, 60, what="every tick's turn settled")
    assert {t.state for t in store.reads.list_turns(api.tenant_a, sid)} == {TurnState.COMPLETED}
    assert check_all(database_url, tenants=[api.tenant_a]) == []


def test_two_beats_fire_each_tick_once(
    api: Api, procs: Any, store: Any, sid: str, database_url: str
) -> None:
    _two_beats_fire_each_tick_once(api, procs, store, sid, database_url, every=2, ticks=6)


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_two_beats_fire_each_ten_second_tick_once_for_three_minutes(
    api: Api, procs: Any, store: Any, sid: str, database_url: str
) -> None:
    """Issue 26's measure: a 3-minute run of 10-second ticks under two beats."""
    _two_beats_fire_each_tick_once(api, procs, store, sid, database_url, every=10, ticks=18)


@pytest.mark.parametrize(("missed", "runs"), [("run_once", 1), ("skip", 0)])
def test_a_tick_missed_while_down_runs_once_or_is_skipped(
    api: Api, store: Any, sid: str, database_url: str, missed: str, runs: int
) -> None:
    c = api.client()
    name = f"m-{missed.replace('_', '')}-{sid}"
    body = {**BODY, "schedule_id": name, "every_seconds": 10, "missed": missed}
    assert c.post("/v1/schedules", json=body).status_code == 201
    # everything was down for ten minutes: sixty ticks passed unfired
    with psycopg.connect(database_url.replace("+psycopg", "")) as conn:
        conn.execute(
            "UPDATE schedules SET next_at = now() - interval '10 minutes', "
            "created_at = now() - interval '11 minutes' WHERE schedule_id = %s",
            (name,),
        )
    tick = store.schedules.get_schedule(api.tenant_a, name).next_at
    sent: list[tuple[str, str]] = []
    agents = load_agents("tests.agents")
    for _ in range(2):  # a second pass finds nothing due
        fire_once(store, agents, lambda t, s: sent.append((t, s)), grace=60)
    after = store.schedules.get_schedule(api.tenant_a, name)
    assert after.next_at > datetime.now(UTC) - timedelta(seconds=1)
    # the ticks of the last minute (within the grace) run, each once; of the ones
    # before, the first runs once or not by the policy, and the rest are counted
    total = round((after.next_at - tick).total_seconds() / 10)
    recent = [s for _, s in sent if s != schedules.turn_id(name, tick)]
    assert len(recent) == len(set(recent)) in (6, 7)
    assert after.fired == runs + len(recent) == len(sent)
    assert after.skipped == total - after.fired >= 50
    if runs:
        turn_sid = schedules.turn_id(name, tick)
        [turn] = store.reads.list_turns(api.tenant_a, turn_sid)
        assert turn.turn_id == turn_sid
    assert after.last_tick == after.next_at - timedelta(seconds=10)


def _late(database_url: str, name: str, *, seconds: int, every: int) -> None:
    """Make ``name`` wait for a tick ``seconds`` ago, its ticks whole intervals from then."""
    with psycopg.connect(database_url.replace("+psycopg", "")) as conn:
        conn.execute(
            "UPDATE schedules SET next_at = date_trunc('second', now()) - make_interval("
            "secs => %s), created_at = date_trunc('second', now()) - make_interval(secs => %s) "
            "WHERE schedule_id = %s",
            (seconds, seconds + every, name),
        )


def test_a_pass_late_by_many_intervals_admits_every_tick_once_in_order(
    api: Api, store: Any, sid: str, database_url: str
) -> None:
    """Issue 37: a pass that ran 45 intervals after a tick admitted that tick and jumped
    past now (44 ticks never admitted, ``skipped`` 0). Now two passes at once, run until
    the schedule waits for a tick ahead, admit each tick since the late one exactly once,
    in order, at most TICKS_PER_PASS a pass, and none is counted skipped."""
    c = api.client()
    name = f"late-{sid}"
    body = {**BODY, "schedule_id": name, "every_seconds": 1, "session_id": sid, "missed": "skip"}
    assert c.post("/v1/schedules", json=body).status_code == 201
    _late(database_url, name, seconds=45, every=1)
    first = store.schedules.get_schedule(api.tenant_a, name).next_at
    sent: list[str] = []
    agents = load_agents("tests.agents")
    passes: list[Any] = []

    def one_pass() -> None:
        passes.append(fire_once(store, agents, lambda t, s: sent.append(s), grace=60))

    while store.schedules.get_schedule(api.tenant_a, name).next_at <= datetime.now(UTC):
        beats = [threading.Thread(target=one_pass) for _ in range(2)]  # two beats at once
        for b in beats:
            b.start()
        for b in beats:
            b.join()
    after = store.schedules.get_schedule(api.tenant_a, name)
    ticks = sorted(
        int(t.turn_id.rsplit(".", 1)[1]) for t in store.reads.list_turns(api.tenant_a, sid)
    )
    expected = int((after.next_at - first).total_seconds())
    assert len(ticks) == len(set(ticks)) == expected == after.fired >= 46
    assert ticks[0] == int(schedules.tick_key(first))
    assert all(b - a == 1000 for a, b in itertools.pairwise(ticks)), ticks
    assert after.skipped == 0 and sum(p.skipped for p in passes) == 0
    assert sum(p.fired for p in passes) == expected
    assert max(p.fired for p in passes) <= schedules.TICKS_PER_PASS
    assert after.last_tick == after.next_at - timedelta(seconds=1)
    assert c.get(f"/v1/schedules/{name}").json()["skipped"] == 0


def test_ticks_past_the_grace_are_skipped_counted_and_the_rest_admitted(
    api: Api, store: Any, sid: str, database_url: str
) -> None:
    c = api.client()
    name = f"grace-{sid}"
    body = {**BODY, "schedule_id": name, "every_seconds": 2, "session_id": sid, "missed": "skip"}
    assert c.post("/v1/schedules", json=body).status_code == 201
    _late(database_url, name, seconds=40, every=2)  # 20 ticks late, 10 within 20 s grace
    first = store.schedules.get_schedule(api.tenant_a, name).next_at
    agents = load_agents("tests.agents")
    before = datetime.now(UTC)
    report = fire_once(store, agents, lambda t, s: None, grace=20)
    done = datetime.now(UTC)
    after = store.schedules.get_schedule(api.tenant_a, name)
    ticks = sorted(
        int(t.turn_id.rsplit(".", 1)[1]) for t in store.reads.list_turns(api.tenant_a, sid)
    )
    # the first admitted is the first tick within the grace of the pass, none before it
    start = datetime.fromtimestamp(ticks[0] / 1000, UTC)
    assert before - timedelta(seconds=20) <= start < done - timedelta(seconds=18)
    assert all(b - a == 2000 for a, b in itertools.pairwise(ticks)), ticks
    late = (ticks[0] - int(schedules.tick_key(first))) // 2000
    assert late >= 9 and report.skipped == after.skipped == late
    assert report.fired == after.fired == len(ticks) >= 10
    shown = c.get(f"/v1/schedules/{name}").json()
    assert (shown["skipped"], shown["fired"]) == (late, len(ticks))
