"""Session forks over the API (api/routes_fork.py, Store.forks.fork): the journal up to a
seq copied with its seqs and turn ids, turns active at that seq cut, the source
untouched, idempotency by the new session's id, the bounds of the seq, tenancy; and
a fork runs a new turn, at the next seq, on a real worker."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import psycopg
import pytest

from tests.integration.api_server import Api, Stepper, admit, serve_api
from tests.invariants import check_all
from tests.procs import Procs, wait_for
from tests.rows import tenant_rows
from turnkeep.runtime.states import TurnState
from turnkeep.store.facade import Store
from turnkeep.store.records import EventRecord


@pytest.fixture(scope="module")
def api(service_env: dict[str, str]) -> Iterator[Api]:
    with serve_api(service_env) as handle:
        yield handle


def fork(
    c: httpx.Client, sid: str, at_seq: Any, key: str | None = None, **body: Any
) -> httpx.Response:
    headers = {} if key is None else {"Idempotency-Key": key}
    return c.post(f"/v1/sessions/{sid}/fork", json={"at_seq": at_seq, **body}, headers=headers)


def _events(store: Store, tenant: str, sid: str) -> list[EventRecord]:
    earliest = store.reads.get_session(tenant, sid).earliest_seq
    return store.reads.event_page(tenant, sid, after=earliest - 1, limit=1000).events


def _same(e: EventRecord) -> tuple[Any, ...]:
    """An event as a fork must copy it (all but its session)."""
    return (e.seq, e.turn_id, e.type, e.step, e.fence, e.data, e.created_at)


def _source(api: Api, store: Store, sid: str) -> None:
    """t1 completed (seq 1-4), t2 running (5-7), t3 queued behind it (8)."""
    c = api.client()
    assert admit(c, sid, "t1").status_code == 202
    one = Stepper(store, None, api.tenant_a, sid, "t1")
    one.start()
    one.model("It is sunny in Paris.")
    one.complete({"text": "sunny"})
    assert admit(c, sid, "t2", text="And in Oslo?").status_code == 202
    two = Stepper(store, None, api.tenant_a, sid, "t2")
    two.start()
    two.model("checking", [{"id": "c1", "name": "weather", "arguments": {"city": "Oslo"}}])
    assert admit(c, sid, "t3", text="And in Rome?").status_code == 202
    assert store.reads.get_session(api.tenant_a, sid).head_seq == 8


def test_a_fork_copies_the_journal_up_to_its_seq_and_leaves_the_source_alone(
    api: Api, store: Store, sid: str
) -> None:
    _source(api, store, sid)
    tenant, c = api.tenant_a, api.client()
    before = [_same(e) for e in _events(store, tenant, sid)]
    source_turns = store.reads.list_turns(tenant, sid)

    r = fork(c, sid, 4, key=f"{sid}-at4")
    assert r.status_code == 201, r.text
    body = r.json()
    assert body["session_id"] == f"{sid}-at4" and body["agent"] == "demo"
    assert (body["head_seq"], body["earliest_seq"]) == (4, 1)
    assert body["forked_from"] == {"session_id": sid, "seq": 4} and body["cut_turns"] == []
    assert r.headers["location"] == f"/v1/sessions/{sid}-at4"

    copied = _events(store, tenant, f"{sid}-at4")
    assert [_same(e) for e in copied] == before[:4]
    turns = store.reads.list_turns(tenant, f"{sid}-at4")
    assert [(t.turn_id, t.state, t.result) for t in turns] == [
        ("t1", TurnState.COMPLETED, {"text": "sunny"})
    ]
    t1 = source_turns[0]
    assert (turns[0].input_hash, turns[0].accepted_seq, turns[0].attempt) == (
        t1.input_hash,
        t1.accepted_seq,
        t1.attempt,
    )
    # no copied event's fence is above the fork's (a new lease's token goes above it)
    assert (
        store.reads.get_session(tenant, f"{sid}-at4").fence
        == store.reads.get_session(tenant, sid).fence
    )
    assert store.forks.forked_from(tenant, f"{sid}-at4") == (sid, 4)
    assert store.forks.forked_from(tenant, sid) is None
    session = c.get(f"/v1/sessions/{sid}-at4").json()
    assert (session["state"], session["head_seq"]) == ("idle", 4)

    # the source: every event and turn as it was
    assert [_same(e) for e in _events(store, tenant, sid)] == before
    assert store.reads.list_turns(tenant, sid) == source_turns
    # the transcript of the fork is the source's up to the seq
    mine = c.get(f"/v1/sessions/{sid}-at4/messages").json()["messages"]
    theirs = c.get(f"/v1/sessions/{sid}/messages").json()["messages"]
    assert mine == [m for m in theirs if m["seq"] <= 4]


def test_turns_active_at_the_seq_are_cut_and_never_run_in_the_fork(
    api: Api, store: Store, sid: str
) -> None:
    _source(api, store, sid)
    tenant, c = api.tenant_a, api.client()
    r = fork(c, sid, 7, key=f"{sid}-at7")
    assert r.status_code == 201 and r.json()["cut_turns"] == ["t2"], r.text
    turns = {t.turn_id: t for t in store.reads.list_turns(tenant, f"{sid}-at7")}
    assert set(turns) == {"t1", "t2"}
    cut = turns["t2"]
    assert cut.state is TurnState.CANCELLED and cut.error is not None
    assert cut.error["code"] == "fork_cut" and cut.result is None and cut.pending_input is None
    assert store.reads.lane_head(tenant, f"{sid}-at7") is None
    assert [e.seq for e in _events(store, tenant, f"{sid}-at7")] == list(range(1, 8))
    # the source's t2 runs on
    assert store.reads.get_turn(tenant, sid, "t2").state is TurnState.RUNNING

    # at the head: the queued t3 is cut as well
    whole = fork(c, sid, 8)
    assert whole.status_code == 201 and whole.json()["cut_turns"] == ["t2", "t3"]
    # a turn settled after the seq is cut too: its outcome is not the fork's
    t2 = Stepper(store, None, tenant, sid, "t2")
    t2.fence, t2.revision, t2.step_no = (
        store.reads.get_session(tenant, sid).fence,
        store.reads.get_turn(tenant, sid, "t2").revision,
        2,
    )
    t2.tool("c1", "rain")
    t2.model("It rains in Oslo.")
    t2.complete({"text": "rain"})
    late = fork(c, sid, 7)
    assert late.status_code == 201 and late.json()["cut_turns"] == ["t2"]
    settled = fork(c, sid, 11)  # t2 settled at 11; t3 still queued behind it
    assert settled.status_code == 201 and settled.json()["cut_turns"] == ["t3"]
    done = store.reads.get_turn(tenant, settled.json()["session_id"], "t2")
    assert done.state is TurnState.COMPLETED and done.result == {"text": "rain"}


def test_a_fork_is_idempotent_by_its_session_id(api: Api, store: Store, sid: str) -> None:
    _source(api, store, sid)
    c = api.client()
    key = f"{sid}-f"
    first = fork(c, sid, 4, key=key)
    assert first.status_code == 201
    again = fork(c, sid, 4, key=key)
    assert again.status_code == 200, again.text
    assert again.json() == {**first.json(), "cut_turns": []}
    # the id in the body is the same fork
    assert fork(c, sid, 4, session_id=key).status_code == 200
    # another fork of that id
    other = fork(c, sid, 5, key=key)
    assert other.status_code == 409 and other.json()["code"] == "idempotency_conflict"
    # the id of a session that is no fork
    busy = fork(c, sid, 4, key=sid)
    assert busy.status_code == 409 and busy.json()["code"] == "session_exists"
    # key and body naming two different sessions
    both = fork(c, sid, 4, key=key, session_id=f"{key}-2")
    assert both.status_code == 422 and both.json()["code"] == "validation_error"
    bad = fork(c, sid, 4, key="not a key")
    assert bad.status_code == 400 and bad.json()["code"] == "invalid_idempotency_key"
    # no id at all: a new fork each time
    a, b = fork(c, sid, 4), fork(c, sid, 4)
    assert a.status_code == b.status_code == 201
    assert a.json()["session_id"] != b.json()["session_id"]
    assert len(store.reads.list_turns(api.tenant_a, key)) == 1


def test_the_seq_must_be_retained_and_not_beyond_the_head(api: Api, store: Store, sid: str) -> None:
    c, tenant = api.client(), api.tenant_a
    for tid in ("t1", "t2", "t3"):
        assert admit(c, sid, tid).status_code == 202
        stepper = Stepper(store, None, tenant, sid, tid)
        stepper.start()
        stepper.model("sunny")
        stepper.complete({"text": "sunny"})
    assert store.reads.get_session(tenant, sid).head_seq == 12
    ahead = fork(c, sid, 13)
    assert ahead.status_code == 409, ahead.text
    assert ahead.json()["code"] == "fork_point_ahead" and ahead.json()["head_seq"] == 12
    for zero in (0, -1, "3", None):
        assert fork(c, sid, zero).status_code == 422

    pruned = store.retention.prune(tenant, sid, retain=4, batch=100, window_rows=1)
    earliest = pruned.earliest_seq
    assert 1 < earliest <= 9
    gone = fork(c, sid, earliest - 1)
    assert gone.status_code == 410, gone.text
    assert gone.json()["code"] == "fork_point_pruned"
    assert (gone.json()["earliest"], gone.json()["latest"]) == (earliest, 12)
    kept = fork(c, sid, 12, key=f"{sid}-kept")
    assert kept.status_code == 201 and kept.json()["earliest_seq"] == earliest
    copied = _events(store, tenant, f"{sid}-kept")
    assert [e.seq for e in copied] == list(range(earliest, 13))
    # turn rows outlive the prune: all three are the fork's
    assert [t.turn_id for t in store.reads.list_turns(tenant, f"{sid}-kept")] == ["t1", "t2", "t3"]


def test_another_tenants_session_and_a_reader_are_refused(
    api: Api, store: Store, sid: str, database_url: str
) -> None:
    _source(api, store, sid)
    tenants = (api.tenant_a, api.tenant_b)
    before = [tenant_rows(database_url, t) for t in tenants]
    other = fork(api.client("b"), sid, 4, key=f"{sid}-theirs")
    assert other.status_code == 404 and other.json()["code"] == "not_found"
    assert fork(api.client(), f"{sid}-none", 1).status_code == 404
    reader = fork(api.client("a-reader"), sid, 4)
    assert reader.status_code == 403 and reader.json()["code"] == "forbidden_role"
    assert [tenant_rows(database_url, t) for t in tenants] == before  # not a row written
    assert api.client("b").get(f"/v1/sessions/{sid}-theirs").status_code == 404
    assert api.client().get(f"/v1/sessions/{sid}-theirs").status_code == 404


# -- a real worker runs the fork's next turn -------------------------------------------------


@pytest.fixture(scope="module")
def worker_api(service_env: dict[str, str]) -> Iterator[Api]:
    # the worker processes' broker and agents, so the API's enqueues reach them
    with serve_api(
        service_env, agents="tests.agents", broker_url=service_env["TURNKEEP_REDIS_URL"]
    ) as handle:
        yield handle


def _terminal(store: Store, tenant: str, sid: str, tid: str) -> Any:
    def done() -> Any:
        turn = store.reads.get_turn(tenant, sid, tid)
        return turn if turn.state.terminal else None

    return wait_for(done, 60, interval=0.1, what=f"turn {tid} terminal")


def effects_counted_once(database_url: str, tenant: str, sid: str, after: int = 0) -> None:
    """Each idempotent tool effect of the session's events after ``after`` applied once
    (a fork's copied events are the source's: their effects are keyed by it)."""
    with psycopg.connect(database_url.replace("postgresql+psycopg://", "postgresql://")) as conn:
        rows = conn.execute(
            "SELECT e.turn_id, e.step, x.applied FROM events e "
            "LEFT JOIN test_tool_effects x ON x.key = e.tenant_id || '/' || e.session_id "
            "|| '/' || e.turn_id || '/' || e.step "
            "WHERE e.tenant_id = %s AND e.session_id = %s AND e.seq > %s "
            "AND e.type = 'tool.completed' AND e.data ->> 'effect' = 'idempotent'",
            (tenant, sid, after),
        ).fetchall()
    assert rows and all(applied == 1 for *_, applied in rows), rows


def test_a_fork_runs_a_new_turn_at_the_next_seq(
    worker_api: Api, procs: Procs, store: Store, database_url: str, sid: str
) -> None:
    tenant, c = worker_api.tenant_a, worker_api.client()
    procs.worker()
    assert admit(c, sid, "t1", text="steps=1", agent="counter").status_code == 202
    assert _terminal(store, tenant, sid, "t1").state is TurnState.COMPLETED
    head = store.reads.get_session(tenant, sid).head_seq
    source = [_same(e) for e in _events(store, tenant, sid)]

    new = f"{sid}-fork-{uuid.uuid4().hex[:6]}"
    r = fork(c, sid, head, key=new)
    assert r.status_code == 201, r.text
    second = admit(c, new, "t2", text="steps=1", agent="counter")
    assert second.status_code == 202, second.text
    assert second.json()["accepted_seq"] == head + 1
    turn = _terminal(store, tenant, new, "t2")
    assert turn.state is TurnState.COMPLETED, turn.error

    events = _events(store, tenant, new)
    assert [e.seq for e in events] == list(
        range(1, store.reads.get_session(tenant, new).head_seq + 1)
    )
    assert [_same(e) for e in events[:head]] == source
    assert {e.turn_id for e in events[head:]} == {"t2"}
    # the source did not move
    assert [_same(e) for e in _events(store, tenant, sid)] == source
    # a turn id of the source is a replay in the fork, not a new turn
    again = admit(c, new, "t1", text="steps=1", agent="counter")
    assert again.status_code == 200 and again.json()["state"] == "completed"
    assert check_all(database_url, tenants=[tenant], effects_table=False) == []
    effects_counted_once(database_url, tenant, sid)
    effects_counted_once(database_url, tenant, new, after=head)
