"""Approvals and typed input requests, end to end: the real API, a real worker and
beat; the turn waits holding no lease, a person answers once, the turn goes on."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator

import psycopg
import pytest

from tests.integration.api_server import Api, serve_api
from tests.invariants import check_all
from tests.procs import wait_for
from turnkeep.runtime.hashing import sha256_hex
from turnkeep.runtime.states import TurnState


@pytest.fixture(scope="module")
def api(service_env: dict[str, str]) -> Iterator[Api]:
    # the worker processes' broker and agents, so the API's enqueues reach them
    with serve_api(
        service_env, agents="tests.agents", broker_url=service_env["TURNKEEP_REDIS_URL"]
    ) as handle:
        yield handle


def _submit(c, sid: str, agent: str) -> str:
    r = c.post(
        f"/v1/sessions/{sid}/turns",
        json={"agent": agent, "input": [{"role": "user", "content": "go"}]},
    )
    assert r.status_code == 202, r.text
    return r.json()["turn_id"]


def _waiting(c, sid: str, tid: str) -> dict:
    def get():
        t = c.get(f"/v1/sessions/{sid}/turns/{tid}").json()
        return t if t["state"] == "waiting" else None

    return wait_for(get, 30, what="turn waiting")


def _settled(c, sid: str, tid: str) -> dict:
    # long polls of up to 10 s each; one answers at once while the turn waits for
    # someone, so a turn parked on a request that will expire is polled every 0.2 s
    end = time.monotonic() + 60
    while time.monotonic() < end:
        t = c.get(f"/v1/sessions/{sid}/turns/{tid}?wait=10").json()
        if t["state"] in ("completed", "failed", "cancelled"):
            return t
        time.sleep(0.2)
    raise AssertionError(f"turn {tid} did not settle: {t}")


def _effects(database_url: str, prefix: str) -> int:
    url = database_url.replace("postgresql+psycopg://", "postgresql://")
    with psycopg.connect(url) as conn:
        return conn.execute(
            "SELECT count(*) FROM test_tool_effects WHERE key LIKE %s", (prefix + "%",)
        ).fetchone()[0]


def test_approved_tool_runs_once_after_approval(api, procs, store, sid, database_url, redis_url):
    procs.worker()
    c = api.client()
    tid = _submit(c, sid, "banker")
    turn = _waiting(c, sid, tid)
    pending = turn["pending_input"]
    assert (pending["kind"], pending["tool"]["name"], pending["arguments"]) == (
        "approval",
        "transfer",
        {"amount": 7},
    )
    assert _effects(database_url, f"{api.tenant_a}/{sid}/{tid}/") == 0  # not before approval
    # the waiting turn holds no lease: nothing runs while a person thinks
    assert store.reads.lane_head(api.tenant_a, sid).runnable is False
    rid = pending["request_id"]
    bad = c.post(f"/v1/sessions/{sid}/turns/{tid}/inputs/{rid}", json={"approved": "yes"})
    assert bad.status_code == 422 and bad.json()["code"] == "validation_error"
    # another tenant sees no such turn, exactly as a missing one
    other = api.client("b").post(
        f"/v1/sessions/{sid}/turns/{tid}/inputs/{rid}", json={"approved": True}
    )
    assert other.status_code == 404
    ok = c.post(
        f"/v1/sessions/{sid}/turns/{tid}/inputs/{rid}", json={"approved": True, "reason": "fine"}
    )
    assert ok.status_code == 200, ok.text
    again = c.post(f"/v1/sessions/{sid}/turns/{tid}/inputs/{rid}", json={"approved": False})
    assert again.status_code == 409 and again.json()["code"] == "input_not_open"
    done = _settled(c, sid, tid)
    assert done["state"] == "completed", done
    assert done["result"]["text"].startswith("ok: ")
    assert _effects(database_url, f"{api.tenant_a}/{sid}/{tid}/") == 1
    types = [e.type for e in store.reads.turn_events(api.tenant_a, sid, tid)]
    assert types == [
        "turn.accepted",
        "turn.started",
        "model.completed",
        "input.requested",
        "input.resolved",
        "turn.started",
        "tool.completed",
        "model.completed",
        "turn.completed",
    ]
    assert store.reads.get_turn(api.tenant_a, sid, tid).attempt == 1  # a wait is not a retry
    assert check_all(database_url, tenants=[api.tenant_a]) == []


def test_refused_approval_becomes_an_error_result(api, procs, sid, database_url):
    procs.worker()
    c = api.client()
    tid = _submit(c, sid, "banker")
    rid = _waiting(c, sid, tid)["pending_input"]["request_id"]
    r = c.post(
        f"/v1/sessions/{sid}/turns/{tid}/inputs/{rid}",
        json={"approved": False, "reason": "too much"},
    )
    assert r.status_code == 200
    done = _settled(c, sid, tid)
    assert done["result"]["text"] == "error: error: not approved: too much"
    assert _effects(database_url, f"{api.tenant_a}/{sid}/{tid}/") == 0


def test_typed_input_answer_is_the_tool_result(api, procs, sid):
    procs.worker()
    c = api.client()
    tid = _submit(c, sid, "asker")
    pending = _waiting(c, sid, tid)["pending_input"]
    assert pending["kind"] == "question"
    url = f"/v1/sessions/{sid}/turns/{tid}/inputs/{pending['request_id']}"
    assert c.post(url, json={"answer": ""}).status_code == 422  # minLength 1
    assert c.post(url, json={"answer": "Ada", "extra": 1}).status_code == 422
    assert (
        c.post(
            f"/v1/sessions/{sid}/turns/{tid}/inputs/question-9-1", json={"answer": "Ada"}
        ).status_code
        == 404
    )
    assert c.post(url, json={"answer": "Ada"}).status_code == 200
    done = _settled(c, sid, tid)
    assert done["result"]["text"] == 'ok: "Ada"'


def test_expired_request_is_settled_by_the_scan(api, procs, store, sid):
    procs.worker()
    procs.beat()
    c = api.client()
    tid = _submit(c, sid, "hasty")
    rid = _waiting(c, sid, tid)["pending_input"]["request_id"]
    done = _settled(c, sid, tid)
    assert done["state"] == "completed", done
    assert "expired" in done["result"]["text"]
    late = c.post(f"/v1/sessions/{sid}/turns/{tid}/inputs/{rid}", json={"answer": "x"})
    assert late.status_code == 410 and late.json()["code"] == "input_expired"
    resolved = [
        e for e in store.reads.turn_events(api.tenant_a, sid, tid) if e.type == "input.resolved"
    ]
    assert len(resolved) == 1 and resolved[0].data["by"] == "recovery"
    assert store.reads.get_turn(api.tenant_a, sid, tid).state is TurnState.COMPLETED


def test_cancel_settles_a_waiting_turn_at_once_and_the_lane_moves_on(
    api, procs, store, sid, database_url
):
    # a waiting turn holds no worker: the API cancels it in its own statement, no
    # worker needed, and enqueues the session so the turn queued behind it runs
    procs.worker()
    c = api.client()
    first = _submit(c, sid, "banker")
    _waiting(c, sid, first)
    second = _submit(c, sid, "banker")  # a session is bound to one agent
    r = c.post(f"/v1/sessions/{sid}/turns/{first}/cancel")
    assert r.status_code == 202, r.text
    assert r.json()["state"] == "cancelled" and r.json()["pending_input"] is None
    answer = c.post(
        f"/v1/sessions/{sid}/turns/{first}/inputs/approval-2-1", json={"approved": True}
    )
    assert answer.status_code in (404, 409), answer.text  # nothing left to answer
    # the lane moved on: the second turn ran up to its own approval request
    assert _waiting(c, sid, second)["pending_input"]["kind"] == "approval"
    assert c.post(f"/v1/sessions/{sid}/turns/{second}/cancel").json()["state"] == "cancelled"
    assert _effects(database_url, f"{api.tenant_a}/{sid}/") == 0
    types = [e.type for e in store.reads.turn_events(api.tenant_a, sid, first)]
    assert types[-2:] == ["turn.cancel_requested", "turn.cancelled"]
    # this session's journal: contiguous, one terminal event per turn (the tenant is
    # shared with this module's other tests, whose refused calls check_all would count)
    events, head = store.reads.list_events(api.tenant_a, sid, after=0)
    assert [e.seq for e in events] == list(range(1, head + 1))
    for tid in (first, second):
        ends = [e for e in events if e.turn_id == tid and e.type == "turn.cancelled"]
        assert len(ends) == 1


# -- one protocol, every kind -----------------------------------------------------------


def _answer(c, sid: str, tid: str, rid: str, body: dict):
    return c.post(f"/v1/sessions/{sid}/turns/{tid}/inputs/{rid}", json=body)


def _parked(c, sid: str, tid: str) -> dict:
    def get():
        t = c.get(f"/v1/sessions/{sid}/turns/{tid}").json()
        return t if t["state"] in ("waiting", "needs_reconciliation") else None

    return wait_for(get, 30, what="turn parked")


def _calls(database_url: str, prefix: str) -> int:
    url = database_url.replace("postgresql+psycopg://", "postgresql://")
    with psycopg.connect(url) as conn:
        return conn.execute(
            "SELECT count(*) FROM test_tool_calls WHERE key LIKE %s", (prefix + "%",)
        ).fetchone()[0]


def test_a_request_is_bound_exactly_and_every_wrong_answer_is_refused(api, procs, store, sid):
    procs.worker()
    c = api.client()
    tid = _submit(c, sid, "banker")
    pending = _waiting(c, sid, tid)["pending_input"]
    rid = pending["request_id"]
    assert rid == "approval-2-1"
    assert pending["tool"]["name"] == "transfer" and len(pending["tool"]["schema_hash"]) == 64
    assert len(pending["arguments_hash"]) == 64 and len(pending["response_schema_hash"]) == 64
    assert pending["answered_by"] == {"subject": "alice"}  # the subject that admitted it
    asked = [
        e for e in store.reads.turn_events(api.tenant_a, sid, tid) if e.type == "input.requested"
    ]
    assert pending["at_seq"] == asked[0].seq - 1
    assert asked[0].data["session_id"] == sid and asked[0].data["turn_id"] == tid

    def refused(client, rid_, body, status, code):
        r = _answer(client, sid, tid, rid_, body)
        assert (r.status_code, r.json()["code"]) == (status, code), r.text

    refused(api.client("b"), rid, {"approved": True}, 404, "not_found")  # another tenant's
    refused(c, "approval-7-1", {"approved": True}, 404, "not_found")  # never asked
    refused(api.client("a-member"), rid, {"approved": True}, 403, "input_forbidden")
    refused(api.client("a-reader"), rid, {"approved": True}, 403, "forbidden_role")  # no writes
    refused(c, rid, {"approved": "yes"}, 422, "validation_error")
    assert _answer(c, sid, tid, rid, {"approved": True}).status_code == 200
    refused(c, rid, {"approved": True}, 409, "input_not_open")
    assert _settled(c, sid, tid)["state"] == "completed"
    resolved = [
        e for e in store.reads.turn_events(api.tenant_a, sid, tid) if e.type == "input.resolved"
    ]
    assert len(resolved) == 1
    assert resolved[0].data["by"] == "alice" and len(resolved[0].data["response_hash"]) == 64
    assert resolved[0].data["kind"] == "approval" and resolved[0].data["step"] == 2


def test_an_expired_request_answers_410(api, procs, sid):
    procs.worker()  # no beat: the request expires but nobody settles it yet
    c = api.client()
    tid = _submit(c, sid, "hasty")
    pending = _waiting(c, sid, tid)["pending_input"]
    time.sleep(1.2)  # a deliberate wait past the request's 1 s expiry (ask_quickly)
    r = _answer(c, sid, tid, pending["request_id"], {"answer": "late"})
    assert r.status_code == 410 and r.json()["code"] == "input_expired"


def test_effectful_tools_ask_for_approval_by_default_and_a_policy_decides_per_call(
    api, procs, store, sid, database_url
):
    procs.worker()
    c = api.client()
    tid = _submit(c, sid, "payer")
    pending = _waiting(c, sid, tid)["pending_input"]
    assert (pending["kind"], pending["tool"]["name"]) == ("approval", "pay")
    assert _calls(database_url, f"{api.tenant_a}/{sid}/{tid}/") == 0
    _answer(c, sid, tid, pending["request_id"], {"approved": True})
    assert _settled(c, sid, tid)["state"] == "completed"
    assert _calls(database_url, f"{api.tenant_a}/{sid}/{tid}/") == 1

    other = f"{sid}-tips"
    tid = _submit(c, other, "tipper")
    pending = _waiting(c, other, tid)["pending_input"]
    # the small tip ran without asking; the large one waits, bound to its arguments
    assert (pending["step"], pending["arguments"]) == (4, {"amount": 500})
    _answer(c, other, tid, pending["request_id"], {"approved": False, "reason": "too generous"})
    done = _settled(c, other, tid)
    assert done["result"]["text"].endswith("error: not approved: too generous")


def test_reconciliation_not_executed_runs_the_tool_once_and_the_turn_completes(
    api, procs, store, sid, database_url
):
    procs.beat()
    c = api.client()
    tid = _submit(c, sid, "charger-reconcile")  # "go": one charge
    w = procs.worker({"TURNKEEP_FAULTS": "before_tool_effect=kill-once"}, wait_ready=False)
    wait_for(lambda: not w.alive(), 30, what="worker killed inside the charge")
    procs.worker()
    turn = _parked(c, sid, tid)
    assert turn["state"] == "needs_reconciliation"
    pending = turn["pending_input"]
    assert (pending["kind"], pending["tool"]["name"]) == ("reconciliation", "charge")
    assert pending["detail"] == {"reason": "crash"}
    assert _calls(database_url, f"{api.tenant_a}/{sid}/{tid}/") == 0
    bad = _answer(c, sid, tid, pending["request_id"], {"outcome": "maybe"})
    assert bad.status_code == 422
    ok = _answer(c, sid, tid, pending["request_id"], {"outcome": "not_executed"})
    assert ok.status_code == 200, ok.text
    done = _settled(c, sid, tid)
    assert done["state"] == "completed", done
    assert done["result"]["text"] == "done after 1 calls, 0 errors"
    assert _calls(database_url, f"{api.tenant_a}/{sid}/{tid}/") == 1  # exactly once
    events, head = store.reads.list_events(api.tenant_a, sid, after=0)
    assert [e.seq for e in events] == list(range(1, head + 1))


def test_reconciliation_succeeded_gives_the_tool_its_reported_result(
    api, procs, store, sid, database_url
):
    procs.beat()
    c = api.client()
    tid = _submit(c, sid, "charger-reconcile")
    w = procs.worker({"TURNKEEP_FAULTS": "after_tool_effect=kill-once"}, wait_ready=False)
    wait_for(lambda: not w.alive(), 30, what="worker killed after the charge")
    procs.worker()
    pending = _parked(c, sid, tid)["pending_input"]
    r = _answer(
        c, sid, tid, pending["request_id"], {"outcome": "succeeded", "result": {"charged": 5}}
    )
    assert r.status_code == 200, r.text
    assert _settled(c, sid, tid)["state"] == "completed"
    tool = [
        e for e in store.reads.turn_events(api.tenant_a, sid, tid) if e.type == "tool.completed"
    ]
    assert tool[0].data["message"]["content"] == '{"charged": 5}'
    assert _calls(database_url, f"{api.tenant_a}/{sid}/{tid}/") == 1  # never charged again


def test_budget_extension_approved_goes_on_and_refused_fails(api, procs, store, sid):
    procs.worker()
    c = api.client()
    r = c.post(
        f"/v1/sessions/{sid}/turns",
        json={"agent": "budgeted", "input": [{"role": "user", "content": "steps=2"}]},
    )
    tid = r.json()["turn_id"]
    pending = _waiting(c, sid, tid)["pending_input"]
    assert pending["kind"] == "budget_extension" and pending["tool"] is None
    assert pending["detail"]["bound"] == "max_tool_calls" and pending["detail"]["limit"] == 1
    assert _answer(c, sid, tid, pending["request_id"], {"approved": True}).status_code == 200
    done = _settled(c, sid, tid)
    assert done["state"] == "completed" and done["result"]["text"] == "done after 2 calls, 0 errors"

    other = f"{sid}-refused"
    r = c.post(
        f"/v1/sessions/{other}/turns",
        json={"agent": "budgeted", "input": [{"role": "user", "content": "steps=2"}]},
    )
    tid = r.json()["turn_id"]
    pending = _waiting(c, other, tid)["pending_input"]
    _answer(c, other, tid, pending["request_id"], {"approved": False, "reason": "enough"})
    done = _settled(c, other, tid)
    assert done["state"] == "failed" and done["error"]["code"] == "budget_exceeded"


def test_external_auth_hands_the_answer_to_the_tool_and_never_stores_it(
    api, procs, store, sid, database_url
):
    procs.worker()
    c = api.client()
    tid = _submit(c, sid, "reader")
    pending = _waiting(c, sid, tid)["pending_input"]
    assert pending["kind"] == "external_auth" and pending["answered_by"] == {"role": "member"}
    assert pending["detail"]["provider"] == "forge" and pending["detail"]["scopes"] == ["repo:read"]
    secret = f"tok-{uuid.uuid4().hex}"
    r = _answer(api.client("a-reader"), sid, tid, pending["request_id"], {"token": secret})
    assert r.status_code == 403  # a reader never answers
    r = _answer(api.client("a-member"), sid, tid, pending["request_id"], {"token": secret})
    assert r.status_code == 200, r.text
    assert secret not in r.text
    done = _settled(c, sid, tid)
    assert done["result"]["text"] == f"ok: read with a token of {len(secret)} characters"
    url = database_url.replace("postgresql+psycopg://", "postgresql://")
    with psycopg.connect(url) as conn:
        leaks = conn.execute(
            "SELECT (SELECT count(*) FROM events WHERE data::text LIKE %(s)s)"
            " + (SELECT count(*) FROM turns WHERE pending_input::text LIKE %(s)s"
            "    OR result::text LIKE %(s)s)",
            {"s": f"%{secret}%"},
        ).fetchone()[0]
    assert leaks == 0
    resolved = [
        e for e in store.reads.turn_events(api.tenant_a, sid, tid) if e.type == "input.resolved"
    ]
    assert resolved[0].data["response"] == {"secret": True}
    assert resolved[0].data["response_hash"] == sha256_hex({"token": secret})
    assert resolved[0].data["by"] == "carol"


def test_a_hung_tool_is_abandoned_at_its_timeout(api, procs, store, sid, database_url):
    procs.worker()
    c = api.client()
    t0 = time.monotonic()
    tid = _submit(c, sid, "hanger")
    done = _settled(c, sid, tid)
    assert done["state"] == "completed"
    assert done["result"]["text"] == "error: error: timed out after 0.5s (2 tries)"
    assert time.monotonic() - t0 < 25  # not the tool's 30 s, even on a loaded machine
    assert _calls(database_url, f"{api.tenant_a}/{sid}/{tid}/") == 2  # tried again once
    tool = [
        e for e in store.reads.turn_events(api.tenant_a, sid, tid) if e.type == "tool.completed"
    ]
    assert tool[0].data["error"] == "tool_timeout"


def test_a_hung_effectful_tool_parks_for_reconciliation_answered_by_its_role(api, procs, sid):
    procs.worker()
    c = api.client()
    tid = _submit(c, sid, "hanger-reconcile")
    turn = _parked(c, sid, tid)
    pending = turn["pending_input"]
    assert turn["state"] == "needs_reconciliation" and pending["detail"] == {"reason": "timeout"}
    assert pending["answered_by"] == {"role": "admin"}
    body = {"outcome": "failed", "error": "the provider refused it"}
    r = _answer(c, sid, tid, pending["request_id"], body)  # alice is a member
    assert r.status_code == 403 and r.json()["code"] == "input_forbidden"
    assert _answer(api.client("a-admin"), sid, tid, pending["request_id"], body).status_code == 200
    done = _settled(c, sid, tid)
    assert done["result"]["text"] == "error: error: the provider refused it"


def test_an_unknown_provider_fails_on_the_first_attempt(api, procs, store, sid):
    procs.worker()
    c = api.client()
    tid = _submit(c, sid, "unprovided")
    done = _settled(c, sid, tid)
    assert done["state"] == "failed" and done["error"]["code"] == "definition_invalid"
    assert done["attempt"] == 1


def test_a_client_closing_its_stream_cancels_nothing(api, procs, store, sid):
    procs.worker({"TURNKEEP_DEMO_LATENCY": "0.5"})
    c = api.client()
    tid = _submit(c, sid, "demo")
    with c.stream(
        "GET", f"/v1/sessions/{sid}/events", headers={"Accept": "text/event-stream"}
    ) as r:
        for line in r.iter_lines():
            if line.startswith("event: turn.started"):
                break  # the turn runs: hang up on it
    done = _settled(c, sid, tid)
    assert done["state"] == "completed" and not done["cancel_requested"]
    types = [e.type for e in store.reads.turn_events(api.tenant_a, sid, tid)]
    assert "turn.cancel_requested" not in types
