"""The one admission (store/admission.py, docs/architecture.md "One admission") with a
real API, real beats and real workers: a turn that no request brought (a schedule's
tick, a follow-up, a delegated child, an experiment's case and its judge) is bound as
an HTTP one is. Each session it creates gets the tenant's default TTL; one it admits
into keeps an expiry (moved, never cleared); ticks answer the queued quotas (a refused
tick stays due and fires once there is room); a tick is never admitted as a creator no
token stands for any more, or only a reader's: its schedule pauses, saying why."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import psycopg
import pytest

from tests.integration.api_server import Api, admit, serve_api
from tests.procs import wait_for

pytestmark = pytest.mark.timeout(240)

#: the tenants' default TTL, the API's and the workers' (TURNKEEP_SESSION_TTL)
TTL = 3600
#: beat fires due schedules this often; every worker knows the TTL
BEAT = {"TURNKEEP_SCHEDULE_INTERVAL": "0.3", "TURNKEEP_SESSION_TTL": str(TTL)}


@pytest.fixture(scope="module")
def api(service_env: dict[str, str]) -> Iterator[Api]:
    broker = service_env["TURNKEEP_REDIS_URL"]
    with serve_api(
        service_env, agents="tests.agents", broker_url=broker, session_ttl=float(TTL)
    ) as handle:
        yield handle


def _expiry(database_url: str, tenant: str, sid: str) -> datetime | None:
    with psycopg.connect(database_url.replace("+psycopg", "")) as conn:
        row = conn.execute(
            "SELECT expires_at FROM sessions WHERE tenant_id = %s AND session_id = %s",
            (tenant, sid),
        ).fetchone()
    assert row is not None, f"no session {sid}"
    return row[0]  # type: ignore[no-any-return]


def _sessions(database_url: str, tenant: str, prefix: str) -> dict[str, datetime | None]:
    """Each session of ``tenant`` whose id starts with ``prefix``, and its expiry."""
    with psycopg.connect(database_url.replace("+psycopg", "")) as conn:
        rows = conn.execute(
            "SELECT session_id, expires_at FROM sessions"
            " WHERE tenant_id = %s AND starts_with(session_id, %s)",
            (tenant, prefix),
        ).fetchall()
    return {str(r[0]): r[1] for r in rows}


def _about_a_ttl_from_now(at: datetime | None) -> bool:
    now = datetime.now(UTC)
    return at is not None and now + timedelta(seconds=TTL - 120) < at <= now + timedelta(
        seconds=TTL + 5
    )


def _schedule(c: httpx.Client, body: dict[str, Any]) -> dict[str, Any]:
    r = c.post("/v1/schedules", json=body)
    assert r.status_code == 201, r.text
    return dict(r.json())


def _fired(c: httpx.Client, schedule_id: str, at_least: int = 1) -> dict[str, Any] | None:
    got = c.get(f"/v1/schedules/{schedule_id}").json()
    return dict(got) if got["fired"] >= at_least else None


def _ended(c: httpx.Client, sid: str, tid: str) -> dict[str, Any] | None:
    turn = c.get(f"/v1/sessions/{sid}/turns/{tid}", params={"wait": 5}).json()
    return dict(turn) if turn["state"] in ("completed", "failed", "cancelled") else None


def _waiting(c: httpx.Client, sid: str, tid: str) -> bool:
    return bool(c.get(f"/v1/sessions/{sid}/turns/{tid}").json()["state"] == "waiting")


def test_a_tick_keeps_its_sessions_expiry_and_a_session_it_creates_gets_the_default(
    api: Api, procs: Any, store: Any, sid: str, database_url: str
) -> None:
    procs.beat(BEAT)
    procs.worker(BEAT)
    c = api.client()
    r = admit(c, sid)
    assert r.status_code == 202, r.text
    assert wait_for(lambda: _ended(c, sid, r.json()["turn_id"]), 60, what="the first turn")
    before = _expiry(database_url, api.tenant_a, sid)
    assert _about_a_ttl_from_now(before)
    into = f"into-{sid}"
    fresh = f"fresh-{sid}"
    body = {"agent": "demo", "input": [{"role": "user", "content": "Weather in Lisbon?"}]}
    _schedule(c, {**body, "schedule_id": into, "every_seconds": 2, "session_id": sid})
    _schedule(c, {**body, "schedule_id": fresh, "every_seconds": 2})
    wait_for(lambda: _fired(c, into), 60, interval=0.2, what="a tick into the session")
    made = wait_for(lambda: _fired(c, fresh), 60, interval=0.2, what="a tick of its own")
    c.post(f"/v1/schedules/{into}/pause")
    c.post(f"/v1/schedules/{fresh}/pause")
    # the tick moved the expiry on: never null (never expires), never earlier
    after = _expiry(database_url, api.tenant_a, sid)
    assert after is not None and before is not None and after >= before, (before, after)
    # the session a tick made expires as an HTTP one does
    own = _sessions(database_url, api.tenant_a, f"sched.{fresh}.")
    assert len(own) >= made["fired"], own  # type: ignore[index]
    assert all(_about_a_ttl_from_now(at) for at in own.values()), own


def test_a_follow_up_into_its_session_keeps_the_expiry(
    api: Api, procs: Any, store: Any, sid: str, database_url: str
) -> None:
    procs.beat(BEAT)
    procs.worker(BEAT)
    c = api.client()
    r = admit(c, sid, agent="reminder", text="later:2:check the build again")
    assert r.status_code == 202, r.text
    first = wait_for(lambda: _ended(c, sid, r.json()["turn_id"]), 60, what="the asking turn")
    assert first["state"] == "completed", first  # type: ignore[index]
    before = _expiry(database_url, api.tenant_a, sid)
    assert _about_a_ttl_from_now(before)

    def followed() -> bool:
        turns = store.reads.list_turns(api.tenant_a, sid)
        return len(turns) == 2 and all(t.state.terminal for t in turns)

    wait_for(followed, 60, interval=0.2, what="the follow-up turn")
    after = _expiry(database_url, api.tenant_a, sid)
    assert after is not None and before is not None and after >= before, (before, after)


def test_a_delegated_childs_session_gets_the_default_ttl(
    api: Api, procs: Any, sid: str, database_url: str
) -> None:
    procs.worker(BEAT)
    c = api.client()
    r = admit(c, sid, agent="manager", text="tasks=a,b")
    assert r.status_code == 202, r.text
    done = wait_for(lambda: _ended(c, sid, r.json()["turn_id"]), 90, what="the parent")
    assert done["state"] == "completed", done  # type: ignore[index]
    children = _sessions(database_url, api.tenant_a, "dlg-")
    assert len(children) >= 1, children
    assert all(_about_a_ttl_from_now(at) for at in children.values()), children


def test_ticks_answer_the_session_and_tenant_quotas_and_fire_once_there_is_room(
    api: Api, procs: Any, store: Any, sid: str, database_url: str
) -> None:
    """Under quotas of one active turn per session and two per tenant: a turn asking a
    person fills its session, so a tick into it waits; two such turns fill tenant b, so
    b's tick into a new session waits. Each stays due (not skipped) pass after pass,
    and fires once its turns ended."""
    quotas = {"TURNKEEP_MAX_QUEUED_PER_SESSION": "1", "TURNKEEP_MAX_QUEUED_PER_TENANT": "2"}
    procs.beat({**BEAT, **quotas})
    worker = procs.worker({**BEAT, **quotas})
    a, b = api.client(), api.client("b")
    asking = admit(a, sid, agent="asker", text="ask")
    assert asking.status_code == 202, asking.text
    b_asking = {f"b{i}-{sid}": admit(b, f"b{i}-{sid}", agent="asker", text="ask") for i in (1, 2)}
    assert {r.status_code for r in b_asking.values()} == {202}
    wait_for(lambda: _waiting(a, sid, asking.json()["turn_id"]), 60, what="a waits")
    for b_sid, r in b_asking.items():
        wait_for(lambda b_sid=b_sid, r=r: _waiting(b, b_sid, r.json()["turn_id"]), 60)
    ask = {"agent": "asker", "input": [{"role": "user", "content": "ask"}]}
    demo = {"agent": "demo", "input": [{"role": "user", "content": "Weather in Lisbon?"}]}
    full, tenant_full = f"q-{sid}", f"qt-{sid}"
    _schedule(a, {**ask, "schedule_id": full, "every_seconds": 1, "session_id": sid})
    _schedule(b, {**demo, "schedule_id": tenant_full, "every_seconds": 1})
    for name in (full, tenant_full):
        # passes that found each tick due and refused it (recovery/schedules.py's log)
        wait_for(
            lambda name=name: worker.text().count(f"schedule {name}: its tick waits") >= 3,
            60,
            interval=0.2,
            what=f"passes that refused {name}'s tick",
        )
    assert a.get(f"/v1/schedules/{full}").json()["fired"] == 0
    assert b.get(f"/v1/schedules/{tenant_full}").json()["fired"] == 0
    assert [t.turn_id for t in store.reads.list_turns(api.tenant_a, sid)] == [
        asking.json()["turn_id"]
    ]
    assert _sessions(database_url, api.tenant_b, f"sched.{tenant_full}.") == {}
    # room again: both fire (a tick into a's session is again an asking turn: cancel it)
    a.post(f"/v1/sessions/{sid}/turns/{asking.json()['turn_id']}/cancel")
    for b_sid, r in b_asking.items():
        b.post(f"/v1/sessions/{b_sid}/turns/{r.json()['turn_id']}/cancel")
    wait_for(lambda: _fired(a, full), 60, interval=0.2, what="the session's tick, later")
    wait_for(lambda: _fired(b, tenant_full), 60, interval=0.2, what="the tenant's tick, later")
    a.post(f"/v1/schedules/{full}/pause")
    b.post(f"/v1/schedules/{tenant_full}/pause")
    for t in store.reads.list_turns(api.tenant_a, sid):
        if not t.state.terminal:
            a.post(f"/v1/sessions/{sid}/turns/{t.turn_id}/cancel")


def test_a_tick_is_not_admitted_as_a_creator_whose_token_is_gone_or_who_only_reads(
    api: Api, procs: Any, database_url: str
) -> None:
    """The workers' token table no longer has carol, and has erin as a reader only:
    their schedules pause at their tick, ``creator_revoked``, nothing admitted; alice's
    fires under the same table."""
    table = [e for e in json.loads(api.settings.auth.tokens) if e["subject"] != "carol"]
    for e in table:
        if e["subject"] == "erin":
            e["role"] = "reader"
    env = {**BEAT, "TURNKEEP_TOKENS": json.dumps(table)}
    procs.beat(env)
    procs.worker(env)
    body = {"agent": "demo", "input": [{"role": "user", "content": "Weather in Lisbon?"}]}
    made = {}
    for who in ("a", "a-member", "a-admin"):
        schedule_id = f"r-{who}-{uuid.uuid4().hex[:6]}"
        _schedule(api.client(who), {**body, "schedule_id": schedule_id, "every_seconds": 1})
        made[who] = schedule_id
    c = api.client()
    wait_for(lambda: _fired(c, made["a"]), 60, interval=0.2, what="alice's tick")
    for who in ("a-member", "a-admin"):

        def paused(schedule_id: str = made[who]) -> dict[str, Any] | None:
            got = c.get(f"/v1/schedules/{schedule_id}").json()
            return dict(got) if got["paused"] else None

        got = wait_for(paused, 60, interval=0.2, what=f"{who}'s schedule paused")
        assert got["paused_reason"] == "creator_revoked", got  # type: ignore[index]
        assert got["fired"] == 0, got  # type: ignore[index]
        assert _sessions(database_url, api.tenant_a, f"sched.{made[who]}.") == {}
    c.post(f"/v1/schedules/{made['a']}/pause")
    # resumed by its owner, the reason is gone (and the next tick is refused again)
    resumed = api.client("a-member").post(f"/v1/schedules/{made['a-member']}/resume").json()
    assert resumed["paused"] is False and resumed["paused_reason"] is None
    api.client("a-member").post(f"/v1/schedules/{made['a-member']}/pause")


def test_a_fork_keeps_a_ttl(api: Api, sid: str, database_url: str) -> None:
    """A fork is a new session: it expires as its source does (the tenant's TTL here)."""
    c = api.client()
    r = admit(c, sid)
    assert r.status_code == 202, r.text
    forked = c.post(f"/v1/sessions/{sid}/fork", json={"at_seq": 1, "session_id": f"f-{sid}"})
    assert forked.status_code == 201, forked.text
    assert _about_a_ttl_from_now(_expiry(database_url, api.tenant_a, f"f-{sid}"))


def test_an_experiments_cases_and_judges_get_the_default_ttl(
    service_env: dict[str, str], procs: Any, database_url: str
) -> None:
    from tests.integration.test_evaluation import DATASET, EVAL_ENV, _dataset, run

    procs.worker({**BEAT, **EVAL_ENV})
    procs.beat({**BEAT, **EVAL_ENV})
    broker = service_env["TURNKEEP_REDIS_URL"]
    with serve_api(
        service_env, agents="tests.eval_agents", broker_url=broker, session_ttl=float(TTL)
    ) as evals:
        c = evals.client()
        _dataset(c, "ttl", [DATASET[8]])  # ping
        exp = run(c, {"dataset": "ttl", "agent": "evalbot", "agent_version": "1",
                      "judge": {"agent": "judge", "rubric": "Did it answer?"}})  # fmt: skip
        [result] = exp["results"]
        for session_id in (result["session_id"], result["judge"]["session_id"]):
            assert _about_a_ttl_from_now(_expiry(database_url, evals.tenant_a, session_id))
