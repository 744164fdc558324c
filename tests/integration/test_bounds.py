"""Roles, quotas and bounds over real HTTP (issue 11), against a live API; no worker:
admitted turns stay queued, which is what the quotas count.

- a reader is refused every write, 403 ``forbidden_role``, on every surface (HTTP,
  workflow nodes, MCP, A2A), and nothing is written; reads stay open to it;
- active turns per session and per tenant: 429 ``quota_exceeded`` with Retry-After,
  nothing accepted lost, a replay of an accepted key still answered;
- SSE streams per tenant: 429 past the bound, the slot given back when a stream ends;
- output schema size and depth, message length: 422 ``validation_error`` naming the field.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

import httpx
import pytest

from tests.integration.api_server import Api, admit, serve_api
from tests.procs import at_once
from turnkeep.api.a2a.ids import session_for
from turnkeep.store.facade import Store

SESSION_QUOTA = 3
TENANT_QUOTA = 4
STREAMS = 2
SSE = {"Accept": "text/event-stream"}
MCP = "2025-11-25"


@pytest.fixture(scope="module")
def api(service_env: dict[str, str]) -> Iterator[Api]:
    with serve_api(
        service_env,
        max_queued_per_session=SESSION_QUOTA,
        max_streams_per_tenant=STREAMS,
        max_schema_bytes=2048,
        max_schema_depth=6,
        max_message_chars=1000,
        stream_token_secret="bounds-test-secret",
    ) as handle:
        yield handle


def _problem(r: httpx.Response, status: int, code: str) -> dict[str, Any]:
    assert r.status_code == status, r.text
    assert r.headers["content-type"] == "application/problem+json"
    body = r.json()
    assert body["code"] == code and body["status"] == status
    return dict(body)


def _quota(r: httpx.Response, scope: str, limit: int) -> None:
    body = _problem(r, 429, "quota_exceeded")
    assert int(r.headers["retry-after"]) > 0
    assert (body["quota"], body["limit"]) == (scope, limit)


def _negated(levels: int) -> dict[str, Any]:
    """Deep and small: ``{"not": {"not": ...}}``."""
    schema: dict[str, Any] = {}
    for _ in range(levels):
        schema = {"not": schema}
    return schema


# -- roles ----------------------------------------------------------------------------


def test_a_reader_is_refused_every_http_write_and_nothing_is_written(
    api: Api, store: Store, sid: str
) -> None:
    member, reader = api.client(), api.client("a-reader")
    assert admit(member, sid, "t1").status_code == 202
    base = f"/v1/sessions/{sid}/turns"
    writes = [
        admit(reader, sid, "t2"),
        admit(reader, f"{sid}-new", "t1"),
        admit(reader, sid, "t1"),  # even a replay of an admitted turn
        reader.post(f"{base}/t1/cancel"),
        reader.post(f"{base}/t1/inputs/approval-1-1", json={"approved": True}),
        reader.post(f"{base}/nope/inputs/approval-1-1", json={"approved": True}),
        reader.post(
            "/v1/workflows/run-1/nodes/node-1/turns",
            json={"agent": "demo", "input": [{"role": "user", "content": "x"}]},
        ),
    ]
    for r in writes:
        assert _problem(r, 403, "forbidden_role")["detail"] == "a reader may not write"
    assert [t.turn_id for t in store.reads.list_turns(api.tenant_a, sid)] == ["t1"]
    assert store.reads.get_turn(api.tenant_a, sid, "t1").state.value == "queued"
    assert member.get(f"/v1/sessions/{sid}-new").status_code == 404
    assert member.get("/v1/workflows/run-1/nodes/node-1").status_code == 404
    # reads stay open to a reader, stream tokens included
    assert reader.get(f"/v1/sessions/{sid}").status_code == 200
    assert reader.get(f"{base}/t1").json()["state"] == "queued"
    assert reader.get(f"/v1/sessions/{sid}/events", headers={"Accept": "application/json"}).json()[
        "events"
    ]
    assert reader.post(f"/v1/sessions/{sid}/stream-tokens").status_code == 200
    # an admin and a member write as before
    assert admit(api.client("a-admin"), sid, "t3").status_code == 202
    assert api.client("a-member").post(f"{base}/t3/cancel").status_code == 202


def _mcp(c: httpx.Client, token: str, method: str, params: dict[str, Any], **kw: Any):
    """One JSON-RPC message to /mcp (``rid``: a request, else a notification)."""
    headers = {"Accept": "application/json, text/event-stream", "Authorization": f"Bearer {token}"}
    if kw.get("session"):
        headers |= {"Mcp-Session-Id": kw["session"], "Mcp-Protocol-Version": MCP}
    message = {"jsonrpc": "2.0", "method": method, "params": params}
    if kw.get("rid") is not None:
        message["id"] = kw["rid"]
    return c.post("/mcp", json=message, headers=headers)


def test_a_reader_is_refused_over_mcp(api: Api, store: Store, sid: str) -> None:
    assert admit(api.client(), sid, "t1").status_code == 202
    token = api.more["a-reader"]
    with httpx.Client(base_url=api.url, timeout=20) as c:
        init = {"protocolVersion": MCP, "capabilities": {}, "clientInfo": {"name": "raw"}}
        r = _mcp(c, token, "initialize", init, rid=1)
        assert r.status_code == 200, r.text
        session = r.headers["mcp-session-id"]
        assert _mcp(c, token, "notifications/initialized", {}, session=session).status_code == 202
        calls = [
            ("demo", {"prompt": "x", "session_id": sid, "idempotency_key": "t2"}),
            ("turnkeep_cancel", {"session_id": sid, "turn_id": "t1"}),
        ]
        for i, (name, args) in enumerate(calls, start=2):
            params = {"name": name, "arguments": args}
            r = _mcp(c, token, "tools/call", params, rid=i, session=session)
            assert r.status_code == 200, r.text
            assert '"isError":true' in r.text.replace(" ", "")
            assert "forbidden_role: a reader may not write" in r.text
        # the status tool is a read
        params = {"name": "turnkeep_status", "arguments": {"session_id": sid, "turn_id": "t1"}}
        r = _mcp(c, token, "tools/call", params, rid=9, session=session)
        assert "turn queued" in r.text, r.text
    assert [t.turn_id for t in store.reads.list_turns(api.tenant_a, sid)] == ["t1"]
    assert store.reads.get_turn(api.tenant_a, sid, "t1").state.value == "queued"


def test_a_reader_is_refused_over_a2a(api: Api) -> None:
    message = {
        "messageId": uuid.uuid4().hex,
        "role": "ROLE_USER",
        "parts": [{"text": "hello"}],
    }
    body = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": message}}
    headers = {"A2A-Version": "1.0"}
    r = api.client("a-reader").post("/a2a/demo", json=body, headers=headers)
    assert r.status_code == 200, r.text
    error = r.json()["error"]
    assert error["message"] == "a reader may not write"
    assert error["data"][0]["metadata"]["code"] == "forbidden_role", error
    # nothing was written: the message's session does not exist
    sid = session_for("", message["messageId"])
    assert api.client().get(f"/v1/sessions/{sid}").status_code == 404


# -- quotas on active turns --------------------------------------------------------------


def test_session_quota_is_429_and_a_replay_still_answers(api: Api, store: Store, sid: str) -> None:
    c = api.client()
    accepted = {}
    for i in range(SESSION_QUOTA):
        r = admit(c, sid, f"k{i}")
        assert r.status_code == 202, r.text
        accepted[f"k{i}"] = r.content
    head = store.reads.get_session(api.tenant_a, sid).head_seq
    _quota(admit(c, sid, "over"), "session", SESSION_QUOTA)
    _quota(admit(c, sid), "session", SESSION_QUOTA)  # a generated key is no way around it
    # a replay of an accepted key is never refused, and answers what it answered
    for key, first in accepted.items():
        again = admit(c, sid, key)
        assert again.status_code == 200 and again.content == first
    # a reused key with other input is still a conflict, not a quota
    assert admit(c, sid, "k0", text="other").json()["code"] == "idempotency_conflict"
    # nothing accepted was lost, nothing refused was written (not even a seq)
    assert [t.turn_id for t in store.reads.list_turns(api.tenant_a, sid)] == list(accepted)
    assert store.reads.get_session(api.tenant_a, sid).head_seq == head == SESSION_QUOTA
    # other sessions of the tenant have their own bound
    assert admit(c, f"{sid}-2", "k0").status_code == 202
    # a turn that ends frees its place
    assert c.post(f"/v1/sessions/{sid}/turns/k0/cancel").status_code == 202
    assert admit(c, sid, "over").status_code == 202
    _quota(admit(c, sid, "over-again"), "session", SESSION_QUOTA)
    # interrupt cancels every earlier turn: a full lane is no bar to it
    r = admit(c, sid, "stop", multitask="interrupt")
    assert r.status_code == 202, r.text
    states = {t.turn_id: t.state.value for t in store.reads.list_turns(api.tenant_a, sid)}
    assert states == {
        "k0": "cancelled",
        "k1": "cancelled",
        "k2": "cancelled",
        "over": "cancelled",
        "stop": "queued",
    }
    # reject on a full lane says busy, its own answer
    for i in range(SESSION_QUOTA - 1):
        assert admit(c, sid, f"more{i}").status_code == 202
    assert admit(c, sid, "rej", multitask="reject").json()["code"] == "session_busy"


def _race(api: Api, sid: str, keys: list[str]) -> dict[str, httpx.Response]:
    """Admit every key into ``sid`` at once: each one's answer."""
    n = len(keys)
    client = api.client(limits=httpx.Limits(max_connections=n, max_keepalive_connections=n))
    results = at_once(n, lambda i: admit(client, sid, keys[i]))
    assert all(isinstance(r, httpx.Response) for r in results), results
    return dict(zip(keys, results, strict=True))


def test_concurrent_admissions_lose_nothing(api: Api, store: Store, sid: str) -> None:
    """Racing admissions into one session: each 202 is a stored turn, each 429 wrote
    nothing. The bound may be overshot by as many as race into a lane below it (the
    counts see each statement's snapshot, documented in admit_turn), so the first race
    admits at least the quota; once the lane is full, the quota is exact: a second race
    admits none."""
    n = 12
    first = _race(api, sid, [f"race-{i}" for i in range(n)])
    assert {r.status_code for r in first.values()} <= {202, 429}, first
    created = sorted(k for k, r in first.items() if r.status_code == 202)
    assert all(first[k].json()["turn_id"] == k for k in created)
    assert SESSION_QUOTA <= len(created) <= n
    for r in first.values():
        if r.status_code == 429:
            _quota(r, "session", SESSION_QUOTA)
    stored = sorted(t.turn_id for t in store.reads.list_turns(api.tenant_a, sid))
    assert stored == created  # every 202 is a turn, no 429 left one
    seqs = [e.seq for e in store.reads.list_events(api.tenant_a, sid, after=0, limit=100)[0]]
    assert seqs == list(range(1, len(created) + 1))  # no seq taken by a refusal

    # the lane is at (or past) its quota before this race starts: every one is refused
    second = _race(api, sid, [f"late-{i}" for i in range(n)])
    for r in second.values():
        _quota(r, "session", SESSION_QUOTA)
    assert sorted(t.turn_id for t in store.reads.list_turns(api.tenant_a, sid)) == created
    assert store.reads.get_session(api.tenant_a, sid).head_seq == len(created)


def test_tenant_quota_is_429_across_sessions(service_env: dict[str, str], store: Store) -> None:
    with serve_api(service_env, max_queued_per_tenant=TENANT_QUOTA) as tight:
        c = tight.client()
        sids = [f"s-{uuid.uuid4().hex[:8]}" for _ in range(3)]
        for i in range(TENANT_QUOTA):
            assert admit(c, sids[i % 2], f"k{i}").status_code == 202
        _quota(admit(c, sids[2], "k9"), "tenant", TENANT_QUOTA)
        _quota(admit(c, sids[0], "k9"), "tenant", TENANT_QUOTA)
        assert c.get(f"/v1/sessions/{sids[2]}").status_code == 404  # no session was made
        assert admit(c, sids[0], "k0").status_code == 200  # a replay is never refused
        # another tenant has its own count
        assert admit(tight.client("b"), sids[2], "k0").status_code == 202
        kept = [t.turn_id for s in sids[:2] for t in store.reads.list_turns(tight.tenant_a, s)]
        assert sorted(kept) == [f"k{i}" for i in range(TENANT_QUOTA)]
        # a settled turn frees its place in the tenant's count
        assert c.post(f"/v1/sessions/{sids[0]}/turns/k0/cancel").status_code == 202
        assert admit(c, sids[2], "k9").status_code == 202


# -- SSE streams --------------------------------------------------------------------------


def test_sse_streams_per_tenant_are_bounded(api: Api, sid: str) -> None:
    c = api.client()
    assert admit(c, sid, "t1").status_code == 202
    url = f"/v1/sessions/{sid}/events"
    with ExitStack() as streams:
        for _ in range(STREAMS):
            r = streams.enter_context(c.stream("GET", url, headers=SSE))
            assert r.status_code == 200
        over = c.get(url, headers=SSE)
        _quota(over, "streams", STREAMS)
        # JSON pages are not streams; another tenant's streams are its own
        assert c.get(url, headers={"Accept": "application/json"}).status_code == 200
        b = api.client("b")
        assert admit(b, sid, "t1").status_code == 202
        with b.stream("GET", url, headers=SSE) as theirs:
            assert theirs.status_code == 200
        # a stream token stands for the same tenant: counted the same
        token = c.post(f"/v1/sessions/{sid}/stream-tokens").json()["token"]
        with httpx.Client(base_url=api.url, timeout=10) as bare:
            _quota(bare.get(url, params={"stream_token": token}, headers=SSE), "streams", STREAMS)
    # the streams ended: their slots come back
    deadline = time.monotonic() + 10
    while True:
        with c.stream("GET", url, headers=SSE) as r:
            if r.status_code == 200:
                break
        assert time.monotonic() < deadline, "the slots never came back"
        time.sleep(0.1)
    # a refused stream (a cursor ahead of the head) gives its slot back at once
    for _ in range(STREAMS + 1):
        assert c.get(url, params={"after": "999"}, headers=SSE).status_code == 409
    with ExitStack() as streams:
        for _ in range(STREAMS):
            assert streams.enter_context(c.stream("GET", url, headers=SSE)).status_code == 200


# -- request bounds ---------------------------------------------------------------------------


def test_output_schema_size_and_depth_are_422_naming_the_field(api: Api, sid: str) -> None:
    c = api.client()
    wide = {"type": "object", "properties": {f"p{i}": {"type": "string"} for i in range(200)}}
    cases = [
        (wide, "bytes serialized; at most 2048"),
        (_negated(6), "nests deeper than 6 levels"),  # seven objects deep
        (_negated(200), "nests deeper than 6 levels"),  # once a RecursionError: a 500
        ({"type": 12}, "not a valid JSON Schema"),
    ]
    for schema, msg in cases:
        r = admit(c, sid, "k1", output_schema=schema)
        body = _problem(r, 422, "validation_error")
        assert body["detail"] == "invalid field(s): body.output_schema", body
        [error] = body["errors"]
        assert error["loc"] == ["body", "output_schema"] and msg in error["msg"], error
    assert c.get(f"/v1/sessions/{sid}").status_code == 404  # nothing admitted
    assert admit(c, sid, "k1", output_schema=_negated(5)).status_code == 202  # six deep


def test_a_long_message_is_422_naming_it(api: Api, sid: str) -> None:
    c = api.client()
    body = {
        "agent": "demo",
        "input": [
            {"role": "system", "content": "short"},
            {"role": "user", "content": "é" * 1001},
        ],
    }
    r = c.post(f"/v1/sessions/{sid}/turns", json=body)
    problem = _problem(r, 422, "validation_error")
    assert problem["detail"] == "invalid field(s): body.input.1.content"
    assert "at most 1000" in problem["errors"][0]["msg"]
    assert "é" not in json.dumps(problem, ensure_ascii=False)  # never echoes the input
    assert c.get(f"/v1/sessions/{sid}").status_code == 404
    body["input"][1]["content"] = "é" * 1000  # characters, not bytes
    assert c.post(f"/v1/sessions/{sid}/turns", json=body).status_code == 202
