"""Projects and owners (api/service/projects.py, api/http/projects.py, runtime/projects.py)
against the real API.

Alice (tenant a) owns a project with a session in it: a turn waiting for her answer
(moved there as a worker would, with the real store), a queued turn behind it and an
attachment. On every route that reaches a session, carol (tenant a, another subject),
erin (tenant a's admin) and bob (tenant b) get exactly what a session that exists for
nobody gets: 404 ``not_found``, byte for byte, and they change nothing; the owner gets
her answer, so no case is vacuous. The session is listed to alice only; the project
itself is 404 to anyone else. A turn pins the project's override of its agent in its
input and hash at admission: a later change reaches only later turns, and a replay
of a pinned turn after it is 409 ``idempotency_conflict``.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from tests.integration.api_server import Api, Stepper, admit, serve_api
from tests.rows import tenant_rows
from turnkeep.runtime import inputs
from turnkeep.runtime.hashing import input_hash, sha256_hex
from turnkeep.runtime.inputs import InputKind
from turnkeep.runtime.states import EventType, TurnState
from turnkeep.store.facade import Store
from turnkeep.store.step_commit import StepCommit

SSE = {"Accept": "text/event-stream"}
JSON = {"Accept": "application/json"}
#: a session, turn, request, attachment and project that exist for no one
NOWHERE = {
    "sid": "nobody-session",
    "tid": "nobody-turn",
    "queued": "nobody-queued",
    "rid": "question-2-1",
    "aid": "nobody-attachment",
    "pid": "nobody-project",
}
#: who is not the owner: another subject of the tenant, its admin, another tenant
STRANGERS = ["a-member", "a-admin", "b"]
PIRATE = {"instructions": "Speak like a pirate.", "limits": {"max_model_calls": 3}}


@pytest.fixture(scope="module")
def api(service_env: dict[str, str]) -> Iterator[Api]:
    with serve_api(service_env, stream_token_secret="projects-test", max_wait=2.0) as handle:
        yield handle


def _project(c: httpx.Client, overrides: dict[str, Any] | None = None, **kw: Any) -> str:
    body: dict[str, Any] = {"overrides": overrides or {}}
    r = c.post("/v1/projects", json=body, **kw)
    assert r.status_code == 201, r.text
    pid: str = r.json()["project_id"]
    return pid


def _ask(store: Store, tenant: str, sid: str, tid: str) -> str:
    """Move a queued turn to waiting on a question alice must answer, as a worker does."""
    stepper = Stepper(store, None, tenant, sid, tid)
    started = stepper.start()
    request = inputs.build(
        InputKind.QUESTION,
        tenant_id=tenant,
        session_id=sid,
        turn_id=tid,
        step=2,
        nth=1,
        at_seq=started.seq + 1,
        response_schema={"type": "object", "properties": {"answer": {"type": "string"}}},
        expires_in=3600,
        answered_by=inputs.answerers("starter", "alice"),
    )
    store.turns.append(
        tenant,
        sid,
        stepper.fence,
        StepCommit(
            turn_id=tid,
            revision=stepper.revision,
            state=TurnState.WAITING,
            type=EventType.INPUT_REQUESTED,
            data=request,
            step=2,
            pending_input=request,
        ),
    )
    return str(request["request_id"])


@dataclass(frozen=True)
class World:
    """What alice holds."""

    pid: str
    sid: str
    #: waiting on a question for alice
    tid: str
    rid: str
    #: queued behind it
    queued: str
    aid: str


@pytest.fixture(scope="module")
def world(api: Api, store: Store) -> World:
    a = api.client("a")
    run = uuid.uuid4().hex[:8]
    pid = _project(a, {"agents": {"demo": PIRATE}})
    sid = f"proj-{run}"
    r = admit(a, sid, f"first-{run}", project=pid)
    assert r.status_code == 202, r.text
    rid = _ask(store, api.tenant_a, sid, f"first-{run}")
    r = admit(a, sid, f"second-{run}", project=pid)
    assert r.status_code == 202, r.text
    body = {"filename": "a.txt", "content_type": "text/plain", "data_base64": "aGk="}
    r = a.post(f"/v1/sessions/{sid}/attachments", json=body, headers={"Idempotency-Key": "att"})
    assert r.status_code == 201, r.text
    return World(pid, sid, f"first-{run}", rid, f"second-{run}", "att")


@dataclass(frozen=True)
class Case:
    """One request; ``path`` is formatted with the ids; ``owner`` is what alice gets
    for her own (None: not asked, a write would change it)."""

    name: str
    method: str
    path: str
    owner: int | None
    headers: dict[str, str] | None = None
    json: Any = None


CASES = [
    Case("session", "GET", "/v1/sessions/{sid}", 200),
    Case("turns", "GET", "/v1/sessions/{sid}/turns", 200),
    Case("turn", "GET", "/v1/sessions/{sid}/turns/{tid}", 200),
    Case("turn, queued", "GET", "/v1/sessions/{sid}/turns/{queued}", 200),
    Case("turn, long poll", "GET", "/v1/sessions/{sid}/turns/{tid}?wait=1", 200),
    Case("timeline", "GET", "/v1/sessions/{sid}/turns/{tid}/timeline", 200),
    Case("messages", "GET", "/v1/sessions/{sid}/messages", 200),
    Case("messages after a cursor", "GET", "/v1/sessions/{sid}/messages?after=1", 200),
    Case("events, JSON", "GET", "/v1/sessions/{sid}/events", 200, JSON),
    Case("events, JSON, past the head", "GET", "/v1/sessions/{sid}/events?after=999", 409, JSON),
    Case("events, SSE", "GET", "/v1/sessions/{sid}/events", 200, SSE),
    Case(
        "events, SSE, Last-Event-ID",
        "GET",
        "/v1/sessions/{sid}/events",
        200,
        {**SSE, "Last-Event-ID": "1"},
    ),
    Case("stream token", "POST", "/v1/sessions/{sid}/stream-tokens", 200),
    Case("cancel", "POST", "/v1/sessions/{sid}/turns/{queued}/cancel", None),
    Case(
        "answer",
        "POST",
        "/v1/sessions/{sid}/turns/{tid}/inputs/{rid}",
        None,
        json={"answer": "a stranger says so"},
    ),
    Case(
        "answer, invalid",
        "POST",
        "/v1/sessions/{sid}/turns/{tid}/inputs/{rid}",
        422,
        json={"answer": 1},
    ),
    Case("fork", "POST", "/v1/sessions/{sid}/fork", None, json={"at_seq": 1}),
    Case(
        "upload an attachment",
        "POST",
        "/v1/sessions/{sid}/attachments",
        None,
        json={"filename": "b.txt", "content_type": "text/plain", "data_base64": "aGk="},
    ),
    Case("attachment", "GET", "/v1/sessions/{sid}/attachments/{aid}", 200),
    Case("attachment content", "GET", "/v1/sessions/{sid}/attachments/{aid}/content", 200),
    Case("delete an attachment", "DELETE", "/v1/sessions/{sid}/attachments/{aid}", None),
    Case("project", "GET", "/v1/projects/{pid}", 200),
    Case("update the project", "PATCH", "/v1/projects/{pid}", None, json={"overrides": {}}),
]


def _mine(world: World) -> dict[str, Any]:
    return {
        "sid": world.sid,
        "tid": world.tid,
        "queued": world.queued,
        "rid": world.rid,
        "aid": world.aid,
        "pid": world.pid,
    }


def _send(client: httpx.Client, case: Case, ids: dict[str, Any]) -> httpx.Response:
    """The request, read in full unless it is an event stream (which never ends)."""
    headers = {k: v.format(**ids) for k, v in (case.headers or {}).items()}
    with client.stream(case.method, case.path.format(**ids), headers=headers, json=case.json) as r:
        if not r.headers.get("content-type", "").startswith("text/event-stream"):
            r.read()
        return r


def _state(a: httpx.Client, world: World) -> tuple[Any, ...]:
    """What alice has, as she reads it: no stranger may change any of it."""
    session = a.get(f"/v1/sessions/{world.sid}").json()
    turns = a.get(f"/v1/sessions/{world.sid}/turns").json()["turns"]
    project = a.get(f"/v1/projects/{world.pid}").json()
    attachment = a.get(f"/v1/sessions/{world.sid}/attachments/{world.aid}")
    return session, turns, project, attachment.status_code


@pytest.mark.parametrize("who", STRANGERS)
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_a_stranger_gets_what_a_missing_session_gets(
    api: Api, world: World, case: Case, who: str
) -> None:
    a, stranger = api.client("a"), api.client(who)
    before = _state(a, world)
    if case.owner is not None:
        assert _send(a, case, _mine(world)).status_code == case.owner
    theirs = _send(stranger, case, _mine(world))
    missing = _send(stranger, case, NOWHERE)
    own_missing = _send(a, case, NOWHERE)
    assert theirs.status_code == 404, theirs.text
    assert theirs.headers["content-type"] == "application/problem+json"
    assert theirs.json()["code"] == "not_found"
    assert theirs.content == missing.content == own_missing.content
    for value in (world.sid, world.tid, world.pid, api.tenant_a, "alice"):
        assert value not in theirs.text
    assert _state(a, world) == before


def test_the_session_is_listed_to_its_owner_only(api: Api, world: World) -> None:
    def listed(who: str) -> dict[str, Any]:
        r = api.client(who).get("/v1/sessions?limit=500")
        assert r.status_code == 200, r.text
        return {s["session_id"]: s for s in r.json()["sessions"]}

    assert listed("a")[world.sid]["project"] == world.pid
    assert api.client("a").get(f"/v1/sessions/{world.sid}").json()["project"] == world.pid
    for who in STRANGERS:
        assert world.sid not in listed(who), who
    # and the project is listed to its owner only
    for who in STRANGERS:
        page = api.client(who).get("/v1/projects").json()
        assert world.pid not in {p["project_id"] for p in page["projects"]}, who
    mine = api.client("a").get("/v1/projects?limit=500").json()["projects"]
    assert world.pid in {p["project_id"] for p in mine}


def test_a_stranger_admits_nothing_into_the_project_session(
    api: Api, world: World, store: Store
) -> None:
    missing_session = api.client("a").get("/v1/sessions/nobody-session")
    carol = api.client("a-member")
    own = _project(carol)
    before = store.reads.get_session(api.tenant_a, world.sid).head_seq
    for who, extra in (("a-member", {}), ("a-member", {"project": own}), ("a-admin", {})):
        r = admit(api.client(who), world.sid, **extra)
        assert r.status_code == 404, r.text
        assert r.content == missing_session.content
    # naming alice's project (for a new session, or hers) is naming a missing one
    missing_project = admit(carol, f"new-{uuid.uuid4().hex[:8]}", project="nobody-project")
    assert missing_project.status_code == 404
    for sid in (f"new-{uuid.uuid4().hex[:8]}", world.sid):
        r = admit(carol, sid, project=world.pid)
        assert r.status_code == 404 and r.content == missing_project.content
    # a replay of alice's turn id is no way in either
    r = admit(carol, world.sid, world.queued)
    assert r.status_code == 404 and r.content == missing_session.content
    assert store.reads.get_session(api.tenant_a, world.sid).head_seq == before


def test_a_stranger_cannot_take_a_projects_id(api: Api, world: World) -> None:
    a, carol = api.client("a"), api.client("a-member")
    conflict = a.post("/v1/projects", json={"project_id": world.pid, "overrides": {"agents": {}}})
    assert conflict.status_code == 409 and conflict.json()["code"] == "idempotency_conflict"
    r = carol.post("/v1/projects", json={"project_id": world.pid})
    assert r.status_code == 409 and r.content == conflict.content
    r = carol.post("/v1/projects", json={}, headers={"Idempotency-Key": world.pid})
    assert r.status_code == 409 and r.content == conflict.content
    assert a.get(f"/v1/projects/{world.pid}").json()["owner"] == "alice"


def test_the_owner_answers_and_forks_within_the_project(api: Api, world: World) -> None:
    """Last of the matrix: after every refusal above, alice's request is still open."""
    a = api.client("a")
    r = a.post(
        f"/v1/sessions/{world.sid}/turns/{world.tid}/inputs/{world.rid}",
        json={"answer": "aye"},
    )
    assert r.status_code == 200, r.text
    r = a.post(f"/v1/sessions/{world.sid}/fork", json={"at_seq": 1})
    assert r.status_code == 201, r.text
    fork = r.json()["session_id"]
    assert a.get(f"/v1/sessions/{fork}").json()["project"] == world.pid
    carol = api.client("a-member")
    assert carol.get(f"/v1/sessions/{fork}").content == carol.get("/v1/sessions/x").content


# -- creating and changing projects ---------------------------------------------------------


def test_create_replay_conflict_and_read(api: Api) -> None:
    a = api.client("a")
    key = f"proj-{uuid.uuid4().hex[:8]}"
    body = {"overrides": {"agents": {"demo": {"instructions": "Be terse."}}}}
    made = a.post("/v1/projects", json=body, headers={"Idempotency-Key": key})
    assert made.status_code == 201, made.text
    assert made.headers["location"] == f"/v1/projects/{key}"
    project = made.json()
    assert (project["project_id"], project["owner"]) == (key, "alice")
    assert project["overrides"] == body["overrides"]
    again = a.post("/v1/projects", json=body, headers={"Idempotency-Key": key})
    assert again.status_code == 200 and again.json() == project
    named = a.post("/v1/projects", json={**body, "project_id": key})
    assert named.status_code == 200 and named.json() == project
    other = a.post("/v1/projects", json={"overrides": {}}, headers={"Idempotency-Key": key})
    assert other.status_code == 409 and other.json()["code"] == "idempotency_conflict"
    assert a.get(f"/v1/projects/{key}").json() == project
    # the body's id and the key must agree
    r = a.post("/v1/projects", json={"project_id": "x1"}, headers={"Idempotency-Key": "x2"})
    assert r.status_code == 422 and r.json()["errors"][0]["loc"] == ["body", "project_id"]
    # a new id when neither names one; no overrides is an empty document
    fresh = a.post("/v1/projects", json={})
    assert fresh.status_code == 201 and fresh.json()["overrides"] == {"agents": {}}
    # a replay after a change answers the project as it stands
    patched = a.patch(f"/v1/projects/{key}", json={"overrides": {"agents": {}}})
    assert patched.status_code == 200, patched.text
    again = a.post("/v1/projects", json=body, headers={"Idempotency-Key": key})
    assert again.status_code == 200 and again.json()["overrides"] == {"agents": {}}


def test_the_owners_projects_are_paged_newest_first(api: Api) -> None:
    a = api.client("a-member")
    made = [_project(a) for _ in range(3)]
    first = a.get("/v1/projects?limit=2").json()
    assert [p["project_id"] for p in first["projects"]] == made[::-1][:2]
    second = a.get(f"/v1/projects?limit=2&after={first['next']}").json()
    assert made[0] in [p["project_id"] for p in second["projects"]]
    bad = a.get("/v1/projects?after=bm90LWEtY3Vyc29y")
    assert bad.status_code == 422 and bad.json()["errors"][0]["loc"] == ["query", "after"]


@pytest.mark.parametrize(
    ("overrides", "loc"),
    [
        ({"agents": {"ghost": {}}}, ["body", "overrides", "agents", "ghost"]),
        (
            {"agents": {"demo": {"limits": {"max_model_calls": 21}}}},
            ["body", "overrides", "agents", "demo", "limits", "max_model_calls"],
        ),
        (
            {"agents": {"demo": {"limits": {"max_model_calls": 0}}}},
            ["body", "overrides", "agents", "demo", "limits", "max_model_calls"],
        ),
        (
            {"agents": {"demo": {"limits": {"max_money": 1}}}},
            ["body", "overrides", "agents", "demo", "limits", "max_money"],
        ),
        (
            {"agents": {"demo": {"model": "gpt-9"}}},
            ["body", "overrides", "agents", "demo", "model"],
        ),
        (
            {"agents": {"demo": {"instructions": ""}}},
            ["body", "overrides", "agents", "demo", "instructions"],
        ),
        (
            {"agents": {"demo": {"instructions": "x" * 32_769}}},
            ["body", "overrides", "agents", "demo", "instructions"],
        ),
        (
            {"agents": {"demo": {"instructions": "a\x00"}}},
            ["body", "overrides", "agents", "demo", "instructions"],
        ),
        ({"tools": []}, ["body", "overrides", "tools"]),
    ],
    ids=[
        "unknown agent",
        "a raised limit",
        "a zero limit",
        "no such limit",
        "not an override",
        "empty instructions",
        "instructions too long",
        "a NUL",
        "not overrides",
    ],
)
def test_overrides_are_validated_on_create_and_update(
    api: Api, world: World, overrides: dict[str, Any], loc: list[str]
) -> None:
    a = api.client("a")
    for r in (
        a.post("/v1/projects", json={"overrides": overrides}),
        a.patch(f"/v1/projects/{world.pid}", json={"overrides": overrides}),
    ):
        assert r.status_code == 422, r.text
        assert r.json()["code"] == "validation_error"
        assert r.json()["errors"][0]["loc"] == loc
        assert "\x00" not in r.text
    assert a.get(f"/v1/projects/{world.pid}").json()["overrides"] == {"agents": {"demo": PIRATE}}


def test_a_reader_creates_and_changes_no_project(api: Api, world: World, database_url: str) -> None:
    reader = api.client("a-reader")
    before = tenant_rows(database_url, api.tenant_a)
    for r in (
        reader.post("/v1/projects", json={}),
        reader.patch(f"/v1/projects/{world.pid}", json={"overrides": {}}),
        reader.patch("/v1/projects/nobody-project", json={"overrides": {}}),
    ):
        assert r.status_code == 403 and r.json()["code"] == "forbidden_role", r.text
    assert tenant_rows(database_url, api.tenant_a) == before  # not a row written


# -- admission: the project of a session, and the pinned override -----------------------------


def _accepted(a: httpx.Client, sid: str, tid: str) -> dict[str, Any]:
    events = a.get(f"/v1/sessions/{sid}/events", headers=JSON).json()["events"]
    (accepted,) = [e for e in events if e["turn_id"] == tid and e["type"] == "turn.accepted"]
    data: dict[str, Any] = accepted["data"]
    return data


def test_the_override_is_pinned_at_admission_and_hashed(api: Api, store: Store) -> None:
    a = api.client("a")
    pid = _project(a, {"agents": {"demo": PIRATE, "other": {"instructions": "Not me."}}})
    sid, run = f"pin-{uuid.uuid4().hex[:8]}", uuid.uuid4().hex[:8]
    first = admit(a, sid, f"t1-{run}", project=pid)
    assert first.status_code == 202, first.text
    pinned = _accepted(a, sid, f"t1-{run}")["input"]["project"]
    assert pinned == {"id": pid, "override": PIRATE, "override_hash": sha256_hex(PIRATE)}
    stored = store.reads.get_turn(api.tenant_a, sid, f"t1-{run}")
    assert stored.input["project"] == pinned
    # the same request again: the same hash, the stored turn
    assert admit(a, sid, f"t1-{run}", project=pid).status_code == 200
    # the project changes: only turns admitted from now on see it
    landlubber = {"instructions": "Speak plainly.", "limits": {"max_tool_calls": 4}}
    r = a.patch(f"/v1/projects/{pid}", json={"overrides": {"agents": {"demo": landlubber}}})
    assert r.status_code == 200 and r.json()["overrides"]["agents"] == {"demo": landlubber}
    assert admit(a, sid, f"t2-{run}", project=pid).status_code == 202
    assert _accepted(a, sid, f"t2-{run}")["input"]["project"]["override"] == landlubber
    after = store.reads.get_turn(api.tenant_a, sid, f"t1-{run}")
    assert (after.input, after.input_hash) == (stored.input, stored.input_hash)
    # a replay of the first turn now hashes with the new override: a conflict
    replay = admit(a, sid, f"t1-{run}", project=pid)
    assert replay.status_code == 409 and replay.json()["code"] == "idempotency_conflict"
    # the change replaced the whole document: an agent it no longer overrides pins an
    # empty override (and the project all the same)
    other = f"other-{run}"
    assert admit(a, other, "o1", agent="other", project=pid).status_code == 202
    assert _accepted(a, other, "o1")["input"]["project"] == {
        "id": pid,
        "override": {},
        "override_hash": sha256_hex({}),
    }


def test_a_turn_without_a_project_hashes_as_before(api: Api, store: Store) -> None:
    a = api.client("a")
    sid = f"plain-{uuid.uuid4().hex[:8]}"
    assert admit(a, sid, "t1", text="hello").status_code == 202
    turn = store.reads.get_turn(api.tenant_a, sid, "t1")
    assert turn.input == {"messages": [{"role": "user", "content": "hello"}]}
    assert turn.input_hash == input_hash(
        messages=turn.input["messages"],
        agent_hash=turn.agent_hash,
        output_schema=turn.output_schema,
        budget=None,
    )
    assert a.get(f"/v1/sessions/{sid}").json()["project"] is None


def test_a_sessions_project_is_set_by_its_first_turn(api: Api) -> None:
    a = api.client("a")
    pid, other = _project(a), _project(a)
    sid, plain = f"set-{uuid.uuid4().hex[:8]}", f"plain-{uuid.uuid4().hex[:8]}"
    assert admit(a, sid, project=pid).status_code == 202
    assert admit(a, plain).status_code == 202
    for target, extra in ((sid, {}), (sid, {"project": other}), (plain, {"project": pid})):
        r = admit(a, target, **extra)
        assert r.status_code == 409, r.text
        assert r.json()["code"] == "project_mismatch"
    for multitask in ("reject", "interrupt"):
        r = admit(a, sid, multitask=multitask)
        assert r.status_code == 409 and r.json()["code"] == "project_mismatch", r.text
    assert admit(a, sid, project=pid).status_code == 202
    turns = a.get(f"/v1/sessions/{sid}/turns").json()["turns"]
    assert len(turns) == 2
    # a new session under interrupt is created in the project too
    fresh = f"int-{uuid.uuid4().hex[:8]}"
    assert admit(a, fresh, project=pid, multitask="interrupt").status_code == 202
    assert a.get(f"/v1/sessions/{fresh}").json()["project"] == pid


def test_a2a_sees_no_strangers_task(api: Api, world: World) -> None:
    """A2A reads through the submit path: a turn of the project (with an id A2A would
    give it) is a task of alice's only."""
    a = api.client("a")
    tid = f"{world.sid}.{'0' * 32}"
    assert admit(a, world.sid, tid, project=world.pid).status_code == 202

    def rpc(who: str, method: str, params: dict[str, Any]) -> dict[str, Any]:
        body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
        r = api.client(who).post("/a2a", json=body, headers={"A2A-Version": "1.0"})
        assert r.status_code == 200, r.text
        out: dict[str, Any] = r.json()
        return out

    assert rpc("a", "GetTask", {"id": tid})["result"]["id"] == tid
    listed = rpc("a", "ListTasks", {"contextId": world.sid})["result"]["tasks"]
    assert [t["id"] for t in listed] == [tid]
    nobody = f"nobody-session.{'0' * 32}"
    for who in STRANGERS:
        theirs = rpc(who, "GetTask", {"id": tid})
        assert theirs == rpc(who, "GetTask", {"id": nobody}), who
        assert "error" in theirs
        empty = rpc(who, "ListTasks", {"contextId": world.sid})["result"]
        assert empty == rpc(who, "ListTasks", {"contextId": "nobody-session"})["result"]
        assert not empty.get("tasks")
