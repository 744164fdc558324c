"""Feedback over real HTTP on turns a real worker ran (issue 28, api/service/feedback.py):
bound to tenant, subject, turn, step and trace; one per (turn, step, subject),
replaced by its author; the note kept as its hash alone; summed up per agent version;
another tenant's turn is missing and a reader may not score."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from tests.integration.api_server import Api, admit, serve_api
from tests.procs import wait_for
from turnkeep.runtime.hashing import sha256_hex
from turnkeep.runtime.obs.tracing import turn_ids

NOTE = "the forecast was wrong: it rained (private note text)"


@pytest.fixture(scope="module")
def api(service_env: dict[str, str]) -> Iterator[Api]:
    with serve_api(
        service_env, agents="tests.agents", broker_url=service_env["TURNKEEP_REDIS_URL"]
    ) as handle:
        yield handle


def _completed(api: Api, store: Any, sid: str, key: str) -> str:
    r = admit(api.client(), sid, key, agent="demo", text="Weather in Lisbon?")
    assert r.status_code == 202, r.text
    wait_for(
        lambda: store.reads.get_turn(api.tenant_a, sid, key).state.terminal, 60, what="turn settled"
    )
    return key


def _rows(database_url: str, tenant: str) -> list[tuple[Any, ...]]:
    with psycopg.connect(database_url.replace("+psycopg", "")) as conn:
        return conn.execute(
            "SELECT step, subject, kind, score, note_hash, note FROM feedback "
            "WHERE tenant_id = %s ORDER BY turn_id, step, subject",
            (tenant,),
        ).fetchall()


def test_feedback_is_bound_replaceable_by_its_author_and_keeps_the_note_as_a_hash(
    api: Api, procs: Any, store: Any, sid: str, database_url: str
) -> None:
    procs.worker()
    tid = _completed(api, store, sid, "fb-1")
    path = f"/v1/sessions/{sid}/turns/{tid}/feedback"
    c = api.client()
    r = c.post(path, json={"thumbs": "down", "note": NOTE})
    assert r.status_code == 201, r.text
    given = r.json()
    trace_id, _ = turn_ids(api.tenant_a, sid, tid)
    assert (given["subject"], given["kind"], given["score"], given["step"]) == (
        "alice",
        "thumbs",
        0.0,
        None,
    )
    assert given["trace_id"] == format(trace_id, "032x")
    assert given["note_hash"] == sha256_hex(NOTE) and len(given["note_hash"]) == 64
    assert given["agent"] == "demo" and given["agent_version"] == "1"
    # its author replaces it; a step of the turn is scored apart, on a declared scale
    again = c.post(path, json={"thumbs": "up"})
    assert again.status_code == 200 and again.json()["score"] == 1.0
    step = c.post(path, json={"score": 4, "scale": [1, 5], "step": 2})
    assert step.status_code == 201 and step.json()["step"] == 2
    # another member's feedback on the same turn is their own
    carol = api.client("a-member").post(path, json={"score": 2, "scale": [1, 5]})
    assert carol.status_code == 201, carol.text
    rows = _rows(database_url, api.tenant_a)
    assert [(r[0], r[1], r[2], r[3]) for r in rows] == [
        (0, "alice", "thumbs", 1.0),
        (0, "carol", "score", 2.0),
        (2, "alice", "score", 4.0),
    ]
    # the note is nowhere in the database: not in the row, not in the journal
    with psycopg.connect(database_url.replace("+psycopg", "")) as conn:
        for table in ("feedback", "events", "turns"):
            found = conn.execute(
                f"SELECT count(*) FROM {table} WHERE CAST({table}.* AS text) LIKE %s",
                ("%private note text%",),
            ).fetchone()
            assert found == (0,), table

    summary = c.get("/v1/agents/demo/feedback").json()
    [v1] = summary["versions"]
    assert (v1["version"], v1["count"], v1["thumbs_up"], v1["thumbs_down"]) == ("1", 3, 1, 0)
    # (1 + (2-1)/4 + (4-1)/4) / 3
    assert v1["mean_score"] == pytest.approx((1 + 0.25 + 0.75) / 3)


def test_feedback_that_does_not_fit_is_refused_and_another_tenant_sees_no_turn(
    api: Api, procs: Any, store: Any, sid: str, database_url: str
) -> None:
    procs.worker()
    tid = _completed(api, store, sid, "fb-2")
    path = f"/v1/sessions/{sid}/turns/{tid}/feedback"
    c = api.client()
    before = _rows(database_url, api.tenant_a)
    for body in (
        {},
        {"thumbs": "up", "score": 3},
        {"score": 9, "scale": [1, 5]},
        {"score": 1, "scale": [5, 1]},
        {"thumbs": "sideways"},
        {"thumbs": "up", "step": 99},
        {"thumbs": "up", "note": "x" * 2001},
    ):
        r = c.post(path, json=body)
        assert r.status_code == 422, (body, r.text)
    assert api.client("b").post(path, json={"thumbs": "up"}).status_code == 404
    assert api.client("a-reader").post(path, json={"thumbs": "up"}).status_code == 403
    missing = c.post(f"/v1/sessions/{sid}/turns/nope/feedback", json={"thumbs": "up"})
    assert missing.status_code == 404
    assert _rows(database_url, api.tenant_a) == before
    assert c.get("/v1/agents/nobody/feedback").status_code == 422
