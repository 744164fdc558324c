"""A second tenant sees nothing anywhere; a reader writes nothing.

Tenant a holds a completed turn, a turn waiting for an approval (the ``banker`` agent,
moved there by a real worker, stopped once the turn waits: a waiting turn holds no
lease), a queued turn, a workflow node, its event cursors and a stream token. Every
route answers tenant b on any of them exactly as it answers a resource that exists
for nobody: 404 ``not_found``, byte for byte the same problem; and tenant a itself
gets its answer, so no case of the matrix is vacuous. Stream tokens are bound to
their tenant: one of tenant b's, even for a session id that a also uses, reads b's
session only. A reader of tenant a is refused (403 ``forbidden_role``) on every write
route, whether the resource exists or not, and changes nothing.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from tests.conftest import WORKER_ENV
from tests.integration.api_server import Api, parse_sse, serve_api
from tests.procs import Procs, wait_for
from turnkeep.api.service.workflows import node_ids

SSE = {"Accept": "text/event-stream"}
JSON = {"Accept": "application/json"}
#: a session, turn, request, run and node that exist for no tenant
NOWHERE = {
    "sid": "nobody-session",
    "tid": "nobody-turn",
    "rid": "approval-1-1",
    "run": "nobody-run",
    "node": "nobody-node",
}


@dataclass(frozen=True)
class World:
    """What tenant a holds."""

    done_sid: str
    done_tid: str
    wait_sid: str
    wait_tid: str
    rid: str
    queued_sid: str
    queued_tid: str
    run: str
    node: str
    #: the waiting session's head seq: a cursor that is valid for tenant a
    head: int


@pytest.fixture(scope="module")
def api(service_env: dict[str, str]) -> Iterator[Api]:
    # the worker's broker and agents, so the API's enqueues reach it
    with serve_api(
        service_env,
        agents="tests.agents",
        broker_url=service_env["TURNKEEP_REDIS_URL"],
        stream_token_secret="tenancy-test",
        max_wait=2.0,
    ) as handle:
        yield handle


def _admit(c: httpx.Client, sid: str, agent: str, text: str = "go") -> str:
    r = c.post(
        f"/v1/sessions/{sid}/turns",
        json={"agent": agent, "input": [{"role": "user", "content": text}]},
    )
    assert r.status_code == 202, r.text
    tid: str = r.json()["turn_id"]
    return tid


def _turn(c: httpx.Client, sid: str, tid: str) -> dict[str, Any]:
    r = c.get(f"/v1/sessions/{sid}/turns/{tid}")
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    return body


@pytest.fixture(scope="module")
def world(
    api: Api,
    service_env: dict[str, str],
    effects_tables: None,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[World]:
    logdir = tmp_path_factory.mktemp("tenancy")
    procs = Procs(
        env={**service_env, **WORKER_ENV, "TURNKEEP_FAULTS_DIR": str(logdir / "faults")},
        logdir=logdir,
    )
    c = api.client("a")
    run = uuid.uuid4().hex[:8]
    try:
        procs.worker()
        done_sid, wait_sid = f"done-{run}", f"wait-{run}"
        done_tid = _admit(c, done_sid, "memory", "remember 7")
        wait_tid = _admit(c, wait_sid, "banker")
        r = c.post(
            f"/v1/workflows/run-{run}/nodes/n1/turns",
            json={"agent": "memory", "input": [{"role": "user", "content": "node"}]},
        )
        assert r.status_code == 202, r.text
        wait_for(lambda: _turn(c, done_sid, done_tid)["state"] == "completed", 30, what="turn done")
        wait_for(
            lambda: c.get(f"/v1/workflows/run-{run}/nodes/n1").json()["state"] == "done",
            30,
            what="node done",
        )
        waiting = wait_for(
            lambda: (t := _turn(c, wait_sid, wait_tid))["state"] == "waiting" and t,
            30,
            what="turn waiting",
        )
    except BaseException:
        print(procs.dump_logs())
        procs.stop_all()
        raise
    # a waiting turn holds no lease: with the worker gone it waits on, and the queued
    # turn admitted now stays queued
    procs.stop_all()
    queued_sid = f"queued-{run}"
    queued_tid = _admit(c, queued_sid, "memory")
    assert isinstance(waiting, dict)
    head = c.get(f"/v1/sessions/{wait_sid}").json()["head_seq"]
    yield World(
        done_sid=done_sid,
        done_tid=done_tid,
        wait_sid=wait_sid,
        wait_tid=wait_tid,
        rid=waiting["pending_input"]["request_id"],
        queued_sid=queued_sid,
        queued_tid=queued_tid,
        run=f"run-{run}",
        node="n1",
        head=head,
    )


@dataclass(frozen=True)
class Case:
    """One request of the matrix; ``path`` is formatted with the ids; ``owner`` is what
    tenant a gets for its own resource (None: not asked, a write would change it)."""

    name: str
    method: str
    path: str
    owner: int | None
    headers: dict[str, str] | None = None
    json: Any = None
    #: the ids of tenant a's resource: "done", "wait" or "queued"
    on: str = "wait"


CASES = [
    Case("session", "GET", "/v1/sessions/{sid}", 200),
    Case("turn", "GET", "/v1/sessions/{sid}/turns/{tid}", 200),
    Case("turn, done", "GET", "/v1/sessions/{sid}/turns/{tid}", 200, on="done"),
    Case("turn, queued", "GET", "/v1/sessions/{sid}/turns/{tid}", 200, on="queued"),
    Case("turn, long poll", "GET", "/v1/sessions/{sid}/turns/{tid}?wait=1", 200, on="done"),
    Case("messages", "GET", "/v1/sessions/{sid}/messages", 200, on="done"),
    Case("messages after a cursor", "GET", "/v1/sessions/{sid}/messages?after=1", 200),
    Case("messages past the head", "GET", "/v1/sessions/{sid}/messages?after={far}", 409),
    Case("events, JSON", "GET", "/v1/sessions/{sid}/events", 200, JSON),
    Case("events, JSON, at the head", "GET", "/v1/sessions/{sid}/events?after={head}", 200, JSON),
    Case("events, JSON, past the head", "GET", "/v1/sessions/{sid}/events?after={far}", 409, JSON),
    Case("events, SSE", "GET", "/v1/sessions/{sid}/events", 200, SSE),
    Case("events, SSE, after", "GET", "/v1/sessions/{sid}/events?after=1", 200, SSE),
    Case(
        "events, SSE, Last-Event-ID",
        "GET",
        "/v1/sessions/{sid}/events",
        200,
        {**SSE, "Last-Event-ID": "{head}"},
    ),
    Case(
        "events, SSE, Last-Event-ID past the head",
        "GET",
        "/v1/sessions/{sid}/events",
        409,
        {**SSE, "Last-Event-ID": "{far}"},
    ),
    Case("stream token", "POST", "/v1/sessions/{sid}/stream-tokens", 200),
    Case("cancel, waiting", "POST", "/v1/sessions/{sid}/turns/{tid}/cancel", None),
    Case("cancel, queued", "POST", "/v1/sessions/{sid}/turns/{tid}/cancel", None, on="queued"),
    Case("cancel, done", "POST", "/v1/sessions/{sid}/turns/{tid}/cancel", 409, on="done"),
    Case(
        "answer",
        "POST",
        "/v1/sessions/{sid}/turns/{tid}/inputs/{rid}",
        None,
        json={"approved": True, "reason": "b says so"},
    ),
    Case(
        "answer, invalid for the request",
        "POST",
        "/v1/sessions/{sid}/turns/{tid}/inputs/{rid}",
        422,
        json={"approved": "yes"},
    ),
    Case("workflow node", "GET", "/v1/workflows/{run}/nodes/{node}", 200),
    Case("workflow node, long poll", "GET", "/v1/workflows/{run}/nodes/{node}?wait=1", 200),
    Case("workflow node's session", "GET", "/v1/sessions/{node_sid}", 200),
    Case("workflow node's turn", "GET", "/v1/sessions/{node_sid}/turns/{node_tid}", 200),
    Case("workflow node's events", "GET", "/v1/sessions/{node_sid}/events", 200, JSON),
]


def _ids(world: World, api: Api, on: str) -> dict[str, Any]:
    sid, tid = {
        "done": (world.done_sid, world.done_tid),
        "wait": (world.wait_sid, world.wait_tid),
        "queued": (world.queued_sid, world.queued_tid),
    }[on]
    node_sid, node_tid = node_ids(api.tenant_a, world.run, world.node)
    return {
        "sid": sid,
        "tid": tid,
        "rid": world.rid,
        "run": world.run,
        "node": world.node,
        "node_sid": node_sid,
        "node_tid": node_tid,
        "head": world.head,
        "far": world.head + 1000,
    }


def _nowhere(world: World) -> dict[str, Any]:
    node_sid, node_tid = node_ids("nobody", NOWHERE["run"], NOWHERE["node"])
    return {**NOWHERE, "node_sid": node_sid, "node_tid": node_tid, "head": 0, "far": 1000}


def _send(client: httpx.Client, case: Case, ids: dict[str, Any]) -> httpx.Response:
    """The request, read in full unless it is an event stream (which never ends): then
    the status and headers only."""
    headers = {k: v.format(**ids) for k, v in (case.headers or {}).items()}
    with client.stream(case.method, case.path.format(**ids), headers=headers, json=case.json) as r:
        if not r.headers.get("content-type", "").startswith("text/event-stream"):
            r.read()
        return r


def _a_unchanged(a: httpx.Client, world: World, before: dict[str, Any]) -> None:
    after = _turn(a, world.wait_sid, world.wait_tid)
    assert after == before, (before, after)
    assert after["state"] == "waiting" and not after["cancel_requested"]
    assert _turn(a, world.queued_sid, world.queued_tid)["state"] == "queued"


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_another_tenant_gets_what_a_missing_resource_gets(
    api: Api, world: World, case: Case
) -> None:
    a, b = api.client("a"), api.client("b")
    mine = _ids(world, api, case.on)
    before = _turn(a, world.wait_sid, world.wait_tid)
    if case.owner is not None:
        assert _send(a, case, mine).status_code == case.owner
    foreign = _send(b, case, mine)
    missing = _send(b, case, _nowhere(world))
    own_missing = _send(a, case, _nowhere(world))
    assert foreign.status_code == 404, foreign.text
    assert foreign.headers["content-type"] == "application/problem+json"
    assert foreign.json()["code"] == "not_found"
    assert foreign.content == missing.content == own_missing.content
    assert missing.status_code == own_missing.status_code == 404
    for value in (mine["sid"], mine["tid"], world.rid, world.run, api.tenant_a):
        assert str(value) not in foreign.text
    _a_unchanged(a, world, before)


def test_another_tenants_stream_token_reads_only_its_own_session(api: Api, world: World) -> None:
    a, b = api.client("a"), api.client("b")
    # b uses the id of a's waiting session for a session of its own
    b_tid = _admit(b, world.wait_sid, "memory", "b's own")
    token = b.post(f"/v1/sessions/{world.wait_sid}/stream-tokens").json()["token"]
    with httpx.Client(base_url=api.url, timeout=20) as anyone:
        page = anyone.get(
            f"/v1/sessions/{world.wait_sid}/events?stream_token={token}", headers=JSON
        )
        assert page.status_code == 200, page.text
        assert {e["turn_id"] for e in page.json()["events"]} == {b_tid}
        with anyone.stream(
            "GET", f"/v1/sessions/{world.wait_sid}/events?stream_token={token}", headers=SSE
        ) as r:
            assert r.status_code == 200
            first = next(f for f in parse_sse(r.iter_lines()) if f is not None)
            assert first.data["turn_id"] == b_tid
        # on another session (a's other one, or one of nobody's): one refusal for all
        refused = [
            anyone.get(f"/v1/sessions/{sid}/events?stream_token={token}", headers=JSON)
            for sid in (world.done_sid, NOWHERE["sid"])
        ]
        assert {r.status_code for r in refused} == {401}
        assert refused[0].content == refused[1].content
    # a's token is a's: a's events, never b's turn
    a_token = a.post(f"/v1/sessions/{world.wait_sid}/stream-tokens").json()["token"]
    with httpx.Client(base_url=api.url, timeout=20) as anyone:
        page = anyone.get(
            f"/v1/sessions/{world.wait_sid}/events?stream_token={a_token}", headers=JSON
        )
    assert {e["turn_id"] for e in page.json()["events"]} == {world.wait_tid}


#: every write route, on tenant a's resources and on none
WRITES = [
    ("admit into a session", "POST", "/v1/sessions/{sid}/turns", "agent"),
    ("admit a new session", "POST", "/v1/sessions/reader-new/turns", "agent"),
    ("cancel", "POST", "/v1/sessions/{sid}/turns/{tid}/cancel", None),
    ("answer", "POST", "/v1/sessions/{sid}/turns/{tid}/inputs/{rid}", "answer"),
    ("start a workflow node", "POST", "/v1/workflows/{run}/nodes/{node}/turns", "agent"),
    ("start a new workflow node", "POST", "/v1/workflows/{run}/nodes/reader-new/turns", "agent"),
]
_BODIES = {
    "agent": {"agent": "memory", "input": [{"role": "user", "content": "reader"}]},
    "answer": {"approved": True, "reason": "a reader says so"},
    None: None,
}


@pytest.mark.parametrize(
    ("method", "path", "body"), [w[1:] for w in WRITES], ids=[w[0] for w in WRITES]
)
def test_a_reader_writes_nothing(
    api: Api, world: World, method: str, path: str, body: str | None
) -> None:
    a, reader = api.client("a"), api.client("a-reader")
    before = _turn(a, world.wait_sid, world.wait_tid)
    answers = [
        reader.request(method, path.format(**ids), json=_BODIES[body])
        for ids in (_ids(world, api, "wait"), _nowhere(world))
    ]
    for r in answers:
        assert r.status_code == 403, r.text
        assert r.headers["content-type"] == "application/problem+json"
        assert r.json()["code"] == "forbidden_role"
    # refused before anything is looked up: existing or not, the same answer
    assert answers[0].content == answers[1].content
    _a_unchanged(a, world, before)
    assert a.get("/v1/sessions/reader-new").status_code == 404
    assert a.get(f"/v1/workflows/{world.run}/nodes/reader-new").status_code == 404
    assert a.get(f"/v1/sessions/{world.wait_sid}").json()["head_seq"] == world.head


def test_a_reader_reads_and_follows(api: Api, world: World) -> None:
    """The refusals above are the role's, not a broken token's."""
    reader = api.client("a-reader")
    assert reader.get(f"/v1/sessions/{world.wait_sid}/turns/{world.wait_tid}").status_code == 200
    assert reader.get(f"/v1/workflows/{world.run}/nodes/{world.node}").status_code == 200
    assert reader.post(f"/v1/sessions/{world.wait_sid}/stream-tokens").status_code == 200
    r = reader.get(f"/v1/sessions/{world.wait_sid}/events", headers=JSON)
    assert r.status_code == 200 and r.json()["events"]


def test_the_owner_can_still_answer(api: Api, world: World) -> None:
    """Last: after every refusal above, the request is open and a's subject answers it."""
    a = api.client("a")
    # Postgres stores no U+0000: refused as invalid (it was a 500), the request stays open
    nul = a.post(
        f"/v1/sessions/{world.wait_sid}/turns/{world.wait_tid}/inputs/{world.rid}",
        json={"approved": True, "reason": "a\x00"},
    )
    assert nul.status_code == 422 and nul.json()["code"] == "validation_error", nul.text
    r = a.post(
        f"/v1/sessions/{world.wait_sid}/turns/{world.wait_tid}/inputs/{world.rid}",
        json={"approved": True, "reason": "a says so"},
    )
    assert r.status_code == 200, r.text
    again = a.post(
        f"/v1/sessions/{world.wait_sid}/turns/{world.wait_tid}/inputs/{world.rid}",
        json={"approved": True},
    )
    assert again.status_code == 409 and again.json()["code"] == "input_not_open"
