"""Waits on another session survive its deletion (issue 37, docs/erasure.md "A session
another waits on"): a parent whose delegated child's session is deleted or expires,
and an experiment whose case session is deleted, settle at once with a typed outcome
(``child_deleted``; the case ``deleted``) instead of waiting out a timeout; and an
experiment's case turns keep a memory of their own, never their creator's."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import httpx
import psycopg
import pytest
import redis

from tests.integration.api_server import Api, admit, serve_api
from tests.procs import Procs, wait_for
from turnkeep.recovery.scan import scan_once
from turnkeep.runtime.states import TurnState
from turnkeep.store.erasure import Reason
from turnkeep.store.facade import Store
from turnkeep.store.lease import LeaseManager
from turnkeep.worker.erasure import erase_session

pytestmark = pytest.mark.timeout(240)

FAR = datetime(2999, 1, 1, tzinfo=UTC)


@pytest.fixture(scope="module")
def api(service_env: dict[str, str]) -> Iterator[Api]:
    # the worker processes' broker and agents, so the API's enqueues reach them
    with serve_api(
        service_env, agents="tests.agents", broker_url=service_env["TURNKEEP_REDIS_URL"]
    ) as handle:
        yield handle


def _pg(url: str) -> str:
    return url.replace("postgresql+psycopg://", "postgresql://", 1)


def _child(database_url: str, tenant: str, parent_sid: str) -> tuple[str, str]:
    """(session, turn) of the one child the parent in ``parent_sid`` delegated to."""
    with psycopg.connect(_pg(database_url)) as conn:
        rows = conn.execute(
            "SELECT session_id, turn_id FROM turns WHERE tenant_id = %s"
            " AND input -> 'delegation' -> 'parent' ->> 'session_id' = %s",
            (tenant, parent_sid),
        ).fetchall()
    assert len(rows) == 1, rows
    return str(rows[0][0]), str(rows[0][1])


def _parked(store: Store, tenant: str, sid: str, tid: str) -> bool:
    return store.reads.get_turn(tenant, sid, tid).state is TurnState.WAITING


def _join(store: Store, tenant: str, sid: str, tid: str) -> list[dict[str, Any]]:
    """The delegate call's results as the parent's model read them; its one answer."""
    events = store.reads.turn_events(tenant, sid, tid)
    assert [e.data["by"] for e in events if e.type == "input.resolved"] == ["runtime"]
    [join] = [e for e in events if e.type == "tool.completed"]
    return list(json.loads(join.data["message"]["content"])["results"])


def _delegate(api: Api, store: Store, database_url: str) -> tuple[str, str, str, str]:
    """A parent (``manager``, one task) parked on its child, whose tool call is slow:
    (parent session, parent turn, child session, child turn)."""
    sid = f"s-par-{uuid.uuid4().hex[:8]}"
    r = admit(api.client(), sid, "parent-1", text="tasks=a", agent="manager")
    assert r.status_code == 202, r.text
    wait_for(lambda: _parked(store, api.tenant_a, sid, "parent-1"), 60, what="the parent parked")
    child_sid, child_tid = _child(database_url, api.tenant_a, sid)
    return sid, "parent-1", child_sid, child_tid


def _settled_child_deleted(store: Store, tenant: str, sid: str, tid: str) -> None:
    turn = store.reads.get_turn(tenant, sid, tid)
    assert turn.state is TurnState.COMPLETED, turn.error
    assert _join(store, tenant, sid, tid) == [
        {
            "id": "a",
            "state": "cancelled",
            "error": {"code": "child_deleted", "message": "the child's session was deleted"},
        }
    ]


def test_deleting_a_childs_session_settles_its_parent_at_once(
    api: Api, procs: Procs, store: Store, database_url: str
) -> None:
    """No beat (no recovery scan): the erasure the DELETE sends tells the parent."""
    procs.worker({"TURNKEEP_TEST_TOOL_SLEEP": "30"})
    tenant = api.tenant_a
    sid, tid, child_sid, _ = _delegate(api, store, database_url)
    r = api.client().delete(f"/v1/sessions/{child_sid}")
    assert r.status_code == 202, r.text
    wait_for(
        lambda: store.reads.get_turn(tenant, sid, tid).state.terminal,
        20,
        interval=0.2,
        what="the parent settled",
    )
    _settled_child_deleted(store, tenant, sid, tid)
    # and the child's session is erased all the same: nothing of it was copied over
    wait_for(
        lambda: (g := store.reads.get_tombstone(tenant, child_sid)) is not None and g.erased,
        30,
        what="the child's session erased",
    )


def test_a_child_session_past_its_ttl_settles_its_parent(
    api: Api, procs: Procs, store: Store, database_url: str
) -> None:
    fast = {"TURNKEEP_ERASURE_INTERVAL": "0.5", "TURNKEEP_TEST_TOOL_SLEEP": "30"}
    procs.worker(fast)
    tenant = api.tenant_a
    sid, tid, child_sid, _ = _delegate(api, store, database_url)
    with psycopg.connect(_pg(database_url), autocommit=True) as conn:
        conn.execute(
            "UPDATE sessions SET expires_after = 1, expires_at = now()"
            " WHERE tenant_id = %s AND session_id = %s",
            (tenant, child_sid),
        )
    procs.beat(fast)
    wait_for(
        lambda: store.reads.get_turn(tenant, sid, tid).state.terminal,
        30,
        interval=0.2,
        what="the parent settled",
    )
    _settled_child_deleted(store, tenant, sid, tid)
    gone = store.reads.get_tombstone(tenant, child_sid)
    assert gone is not None and gone.reason == Reason.EXPIRED.value


class _Quiet:
    def deleted(self, tenant_id: str, session_id: str) -> None:
        pass


def test_the_recovery_scan_settles_a_parent_whose_child_was_erased_untold(
    api: Api, procs: Procs, store: Store, database_url: str, redis_url: str
) -> None:
    """A crash between the tombstone and telling the parent (the erasure ran without
    its hook, and every row of the child is gone): the recovery scan settles it."""
    procs.worker({"TURNKEEP_TEST_TOOL_SLEEP": "30"})
    tenant = api.tenant_a
    sid, tid, child_sid, _ = _delegate(api, store, database_url)
    store.erasure.tombstone(tenant, child_sid, reason=Reason.DELETED, deleted_by="test")
    report = erase_session(store, _Quiet(), tenant, child_sid, batch=500)
    assert report.erased
    assert _parked(store, tenant, sid, tid)  # nobody told it
    sent: list[tuple[str, str]] = []
    leases = LeaseManager(redis.Redis.from_url(redis_url), ttl=5)
    found = scan_once(store, leases, lambda t, s: sent.append((t, s)), grace=3600, batch=50)
    assert found.delegations == 1 and (tenant, sid) in sent
    events = store.reads.turn_events(tenant, sid, tid)
    [answer] = [e.data for e in events if e.type == "input.resolved"]
    assert answer["response"]["children"] == [
        {
            "id": "a",
            "turn_id": answer["response"]["children"][0]["turn_id"],
            "state": "cancelled",
            "error": {"code": "child_deleted", "message": "the child's session was deleted"},
        }
    ]


# -- experiments -----------------------------------------------------------------------


def _dataset(c: httpx.Client, name: str, cases: list[dict[str, Any]]) -> None:
    r = c.post(f"/v1/datasets/{name}/versions", json={"cases": cases})
    assert r.status_code == 201, r.text


def _case(case_id: str, text: str, *assertions: dict[str, Any]) -> dict[str, Any]:
    return {
        "case_id": case_id,
        "input": {"messages": [{"role": "user", "content": text}]},
        "assertions": list(assertions),
    }


def _experiment(c: httpx.Client, body: dict[str, Any]) -> str:
    eid = f"x-{uuid.uuid4().hex[:12]}"
    r = c.post("/v1/experiments", json=body, headers={"Idempotency-Key": eid})
    assert r.status_code == 201, r.text
    return eid


def _completed(c: httpx.Client, eid: str, timeout: float) -> dict[str, Any]:
    def done() -> dict[str, Any] | None:
        got = c.get(f"/v1/experiments/{eid}").json()
        return got if got["state"] == "completed" else None

    return dict(wait_for(done, timeout, interval=0.2, what=f"experiment {eid} completed"))  # type: ignore[arg-type]


def test_deleting_a_case_session_settles_the_case_deleted_and_the_experiment_completes(
    api: Api, procs: Procs, store: Store
) -> None:
    """No beat: the erasure the DELETE sends tells the experiment's driver."""
    procs.worker({"TURNKEEP_TEST_TOOL_SLEEP": "6"}, concurrency=4)
    c = api.client()
    outcome = {"kind": "outcome", "state": "completed"}
    _dataset(
        c, "gone-cases", [_case("doomed", "steps=1", outcome), _case("kept", "steps=1", outcome)]
    )
    eid = _experiment(c, {"dataset": "gone-cases", "agent": "keeper", "concurrency": 2})
    doomed = f"eval.{eid}.doomed"

    def running() -> bool:
        try:
            return store.reads.get_turn(api.tenant_a, doomed, doomed).state is TurnState.RUNNING
        except Exception:
            return False

    wait_for(running, 60, what="the doomed case's turn running")
    assert c.delete(f"/v1/sessions/{doomed}").status_code == 202
    exp = _completed(c, eid, 60)
    by_case = {r["case_id"]: r for r in exp["results"]}
    gone = by_case["doomed"]
    assert (gone["state"], gone["turn_state"], gone["error_code"], gone["passed"]) == (
        "scored",
        None,
        "deleted",
        False,
    )
    assert gone["assertions"] == [] and gone["judge"] is None
    assert by_case["kept"]["passed"] is True
    summary = exp["summary"]
    assert (summary["scored"], summary["passed"], summary["failed"]) == (2, 1, 1)


def test_an_experiments_cases_neither_read_nor_write_their_creators_memory(
    api: Api, procs: Procs, store: Store, database_url: str
) -> None:
    procs.worker(concurrency=4)
    c, tenant = api.client(), api.tenant_a
    # alice (token a) has a memory of her own: one fact, from a turn of hers
    mine = f"s-mine-{uuid.uuid4().hex[:8]}"
    assert admit(c, mine, "t1", text="please remember", agent="rememberer").status_code == 202
    wait_for(lambda: store.reads.get_turn(tenant, mine, "t1").state.terminal, 60, what="t1 ended")
    before = store.memory.recall_facts(tenant, "subject:alice", before=FAR, limit=50)
    assert [f.fact for f in before] == ["the user's cat is Tom"]

    _dataset(
        c,
        "memories",
        [_case("writes", "please remember"), _case("reads", "what do you know?")],
    )
    eid = _experiment(c, {"dataset": "memories", "agent": "rememberer", "concurrency": 1})
    exp = _completed(c, eid, 90)
    assert {r["case_id"]: r["turn_state"] for r in exp["results"]} == {
        "writes": "completed",
        "reads": "completed",
    }
    reads = f"eval.{eid}.reads"
    answer = json.loads(str(store.reads.get_turn(tenant, reads, reads).result["text"]))  # type: ignore[index]
    assert answer["notes"] == []  # nothing of alice's, nor of the other case's
    # the case remembered into a scope of its own, and alice's memory is as it was
    after = store.memory.recall_facts(tenant, "subject:alice", before=FAR, limit=50)
    assert [(f.session_id, f.fact) for f in after] == [(mine, "the user's cat is Tom")]
    writes = f"eval.{eid}.writes"
    with psycopg.connect(_pg(database_url)) as conn:
        rows = conn.execute(
            "SELECT scope_key FROM memories WHERE tenant_id = %s AND session_id = %s",
            (tenant, writes),
        ).fetchall()
    assert rows == [(f"session:{writes}",)]
