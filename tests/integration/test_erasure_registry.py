"""The eraser's registry against the migrated schema, and the holders that live outside
the session's own tables (docs/erasure.md "The registry"), with the real API, store and
worker processes: every table of the catalogue is registered, whatever its columns; a
dataset case made from a turn (its input, file and derived output) goes with the
session, and experiment results keep none of it; a follow-up the session's turn made
goes with it, and a stale worker cannot make one after the tombstone; an experiment
scores a case erased under it at once. Each erasure is checked by reading every row of
every table as the owner.
"""

from __future__ import annotations

import base64
import json
import re
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import psycopg
import pytest

from tests.agents import SCHEMA
from tests.integration.api_server import Api, admit, serve_api
from tests.procs import Procs, wait_for
from turnkeep.recovery.experiments import advance
from turnkeep.runtime.agents.registry import load_agents
from turnkeep.store import erasure_registry
from turnkeep.store.errors import SessionDeleted
from turnkeep.store.facade import Store
from turnkeep.worker.erasure import erase_session
from turnkeep.worker.followup_schedules import StoreFollowUps

pytestmark = pytest.mark.timeout(240)


@pytest.fixture(scope="module")
def api(service_env: dict[str, str]) -> Iterator[Api]:
    with serve_api(
        service_env, agents="tests.agents", broker_url=service_env["TURNKEEP_REDIS_URL"]
    ) as handle:
        yield handle


def _pg(url: str) -> str:
    return url.replace("postgresql+psycopg://", "postgresql://", 1)


def _tables(conn: psycopg.Connection[Any]) -> set[str]:
    rows = conn.execute(
        "SELECT table_name FROM information_schema.tables"
        " WHERE table_schema = 'public' AND table_type = 'BASE TABLE'"
    )
    return {name for (name,) in rows}


def everything(database_url: str) -> str:
    """Every row of every table, of every tenant, as text (the owner's view)."""
    with psycopg.connect(_pg(database_url)) as conn:
        return "\n".join(
            row
            for table in sorted(_tables(conn))
            for (row,) in conn.execute(f"SELECT r::text FROM {table} r")
        )


def test_every_table_of_the_schema_is_registered(database_url: str) -> None:
    """A table the eraser does not know fails here, whatever its columns: a new plane's
    table is registered, as erased or kept with its reason."""
    with psycopg.connect(_pg(database_url)) as conn:
        live = _tables(conn)
    tests_own = set(re.findall(r"CREATE TABLE IF NOT EXISTS (\w+)", SCHEMA))
    registered = erasure_registry.tables()
    assert live - tests_own - set(registered) == set(), "tables the eraser does not know"
    assert set(registered) - live == set(), "registered tables the schema lacks"
    for holder in registered.values():
        assert holder.why, holder
        erased = holder.how is not erasure_registry.How.KEPT
        assert bool(holder.parts) == erased or holder.name == "sessions", holder


def _erased(c: httpx.Client, sid: str) -> dict[str, Any] | None:
    again = c.delete(f"/v1/sessions/{sid}")
    assert again.status_code in (200, 202), again.text
    return again.json() if again.status_code == 200 else None


def _ended(c: httpx.Client, sid: str, tid: str) -> bool:
    r = c.get(f"/v1/sessions/{sid}/turns/{tid}")
    return r.status_code == 200 and r.json()["state"] in ("completed", "failed", "cancelled")


def _seed_results(database_url: str, tenant: str, dataset: str, sid: str, mark: str) -> None:
    """An experiment over version 2: the turn's case ran in its own session, a
    hand-written case ran in ``sid`` itself; both results quote ``mark`` in an
    assertion's detail and the judge's reason."""
    detail = [{"index": 0, "kind": "output_equals", "category": "output", "passed": False,
               "detail": f"expected {mark!r}"}]  # fmt: skip
    score = json.dumps({"turn_state": "completed", "error_code": None, "assertions": detail,
                        "cost_usd": 0.5, "tokens": 7, "steps": 1})  # fmt: skip
    judge = json.dumps({"state": "done", "session_id": "j-1", "turn_id": "j-1",
                        "verdict": "fail", "score": 0.0, "reason": f"it said {mark}"})  # fmt: skip
    with psycopg.connect(_pg(database_url), autocommit=True) as conn:
        conn.execute(
            "INSERT INTO eval_experiments (tenant_id, experiment_id, dataset, dataset_version,"
            " agent_name, agent_version, agent_hash, spec_hash, approvals, concurrency, state,"
            " created_by) VALUES (%s, 'x-1', %s, 2, 'reminder', '1', 'h', 'h', '{}', 1,"
            " 'completed', 'alice')",
            (tenant, dataset),
        )
        for case_id, session in (("from-turn", "ev-x-1-from-turn"), ("by-hand", sid)):
            conn.execute(
                "INSERT INTO eval_results (tenant_id, experiment_id, case_id, ordinal, state,"
                " session_id, turn_id, passed, score, judge_state, judge)"
                " VALUES (%s, 'x-1', %s, 1, 'scored', %s, %s, false, %s, 'done', %s)",
                (tenant, case_id, session, session, score, judge),
            )


def test_a_case_made_from_a_turn_goes_with_its_session(
    api: Api, procs: Procs, database_url: str
) -> None:
    tenant, c = api.tenant_a, api.client()
    sid, ds = f"s-case-{uuid.uuid4().hex[:8]}", f"ds-{uuid.uuid4().hex[:8]}"
    mark = f"case-mark-{uuid.uuid4().hex[:8]}"
    procs.worker()
    assert admit(c, sid, "t0", agent="reminder", text="first").status_code == 202
    data = f"the file says {mark}".encode()
    up = c.post(
        f"/v1/sessions/{sid}/attachments",
        json={"filename": f"{mark}.txt", "content_type": "text/plain",
              "data_base64": base64.b64encode(data).decode()},
    )  # fmt: skip
    assert up.status_code == 201, up.text
    aid = up.json()["attachment_id"]
    r = admit(c, sid, "t1", agent="reminder", text=f"hello {mark}", attachments=[aid])
    assert r.status_code == 202, r.text
    wait_for(lambda: _ended(c, sid, "t1"), 60, what="the turn ended")

    hand = {"case_id": "by-hand", "input": {"messages": [{"role": "user", "content": "hi"}]}}
    assert c.post(f"/v1/datasets/{ds}/versions", json={"cases": [hand]}).status_code == 201
    made = c.post(
        f"/v1/datasets/{ds}/cases",
        json={"turns": [{"session_id": sid, "turn_id": "t1", "case_id": "from-turn",
                         "derive": ["output"]}]},
    )  # fmt: skip
    assert made.status_code == 201, made.text
    # version 3 takes the turn's case over from version 2, its base
    more = {"turns": [{"session_id": sid, "turn_id": "t1", "case_id": "again"}], "base": 2}
    assert c.post(f"/v1/datasets/{ds}/cases", json=more).status_code == 201
    cases = c.get(f"/v1/datasets/{ds}/versions/3").json()["cases"]
    assert [x["case_id"] for x in cases] == ["by-hand", "from-turn", "again"]
    assert mark in json.dumps(cases) and base64.b64encode(data).decode() in json.dumps(cases)
    _seed_results(database_url, tenant, ds, sid, mark)
    assert mark in everything(database_url)

    assert c.delete(f"/v1/sessions/{sid}").status_code == 202
    done = wait_for(lambda: _erased(c, sid), 90, interval=0.3, what="the erasure finished")
    assert done["erased_at"] is not None

    # the cases made from the turn are gone from every version, for every role
    for who in ("a", "a-member", "a-reader", "a-admin"):
        reader = api.client(who)
        for version, left in ((1, ["by-hand"]), (2, ["by-hand"]), (3, ["by-hand"])):
            got = reader.get(f"/v1/datasets/{ds}/versions/{version}")
            assert got.status_code == 200, got.text
            body = got.json()
            assert [x["case_id"] for x in body["cases"]] == left, (who, version)
            assert body["case_count"] == len(left)
    # the experiment keeps its figures and none of the session's words
    with psycopg.connect(_pg(database_url)) as conn:
        rows = conn.execute(
            "SELECT case_id, state, passed, score, judge FROM eval_results"
            " WHERE tenant_id = %s AND experiment_id = 'x-1' ORDER BY case_id",
            (tenant,),
        ).fetchall()
    assert [(r[0], r[1], r[2]) for r in rows] == [
        ("by-hand", "scored", False),
        ("from-turn", "scored", False),
    ]
    for _, _, _, score, judge in rows:
        assert score["cost_usd"] == 0.5 and score["assertions"][0]["detail"] == ""
        assert judge["verdict"] == "fail" and judge["reason"] is None
    text = everything(database_url)
    assert mark not in text
    assert base64.b64encode(data).decode() not in text


def test_a_follow_up_goes_with_its_session(
    api: Api, procs: Procs, store: Store, database_url: str
) -> None:
    tenant, c = api.tenant_a, api.client()
    sid = f"s-fup-{uuid.uuid4().hex[:8]}"
    mark = f"fup-mark-{uuid.uuid4().hex[:8]}"
    procs.worker()
    assert admit(c, sid, "t1", agent="reminder", text=f"later:600:{mark}").status_code == 202
    wait_for(lambda: _ended(c, sid, "t1"), 60, what="the turn ended")
    [made] = [s for s in store.schedules.list_schedules(tenant, limit=500) if s.session_id == sid]
    assert made.origin is not None and made.input["messages"][0]["content"] == mark
    # a schedule made over the API that targets the session is its owner's: it stays
    owned = c.post(
        "/v1/schedules",
        json={"schedule_id": f"own-{sid}", "agent": "reminder", "every_seconds": 3600,
              "session_id": sid, "input": [{"role": "user", "content": "owner's words"}]},
    )  # fmt: skip
    assert owned.status_code == 201, owned.text

    assert c.delete(f"/v1/sessions/{sid}").status_code == 202
    # a worker still running one of its calls makes no follow-up after the tombstone
    stale = StoreFollowUps(
        lambda: store.schedules,
        lambda: pytest.fail("the registry is not needed"),
        tenant_id=tenant,
        session_id=sid,
        turn_id="t1",
        step=9,
        agent="reminder",
        submitted_by="alice",
    )
    at = datetime.now(UTC) + timedelta(hours=1)
    with pytest.raises(SessionDeleted):
        stale.schedule(f"late-{sid}", at, [{"role": "user", "content": mark}], None)
    wait_for(lambda: _erased(c, sid), 90, interval=0.3, what="the erasure finished")
    left = [
        s.schedule_id
        for s in store.schedules.list_schedules(tenant, limit=500)
        if s.session_id == sid
    ]
    assert left == [f"own-{sid}"]
    assert mark not in everything(database_url)


class _Quiet:
    def deleted(self, tenant_id: str, session_id: str) -> None:
        pass


def test_an_experiment_scores_a_case_erased_under_it_at_once(
    api: Api, procs: Procs, store: Store
) -> None:
    """An experiment's case whose source session is erased before the case ran is
    scored at once, refused ``case_erased``, and the experiment completes. The driver's
    pass and the eraser run here, in order, on the real store."""
    tenant, c = api.tenant_a, api.client()
    sid, ds = f"s-exp-{uuid.uuid4().hex[:8]}", f"dx-{uuid.uuid4().hex[:8]}"
    worker = procs.worker()
    assert admit(c, sid, "t1", agent="reminder", text="hello").status_code == 202
    wait_for(lambda: _ended(c, sid, "t1"), 60, what="the turn ended")
    made = c.post(
        f"/v1/datasets/{ds}/cases", json={"turns": [{"session_id": sid, "turn_id": "t1"}]}
    )
    assert made.status_code == 201, made.text
    worker.stop()  # no driver and no eraser but this test's
    eid = f"x-{uuid.uuid4().hex[:12]}"
    r = c.post(
        "/v1/experiments",
        json={"dataset": ds, "agent": "reminder"},
        headers={"Idempotency-Key": eid},
    )
    assert r.status_code == 201, r.text
    assert c.delete(f"/v1/sessions/{sid}").status_code == 202
    assert erase_session(store, _Quiet(), tenant, sid, batch=1000).erased

    advance(store, load_agents("tests.agents"), lambda t, s: None, tenant, eid)
    got = c.get(f"/v1/experiments/{eid}").json()
    assert got["state"] == "completed"
    [case] = got["results"]
    assert (case["state"], case["passed"], case["error_code"]) == ("scored", False, "case_erased")
