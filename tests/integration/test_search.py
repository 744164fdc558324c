"""Search (docs/search.md) on the real API and Postgres: a mix of turns across two
tenants, two owners' projects, states, agents, errors and metadata, admitted over HTTP
and moved by the store's own statements (``Stepper``, the cancel route). Every search
walks every page and is compared with the matching set computed here, from what the
test admitted, independently of the SQL; another tenant's turns and another owner's
project never appear; bad filters are typed 422s."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import httpx
import pytest

from tests.integration.api_server import Api, Stepper, admit, serve_api
from turnkeep.client import AsyncClient, Client
from turnkeep.runtime.states import EventType, TurnState
from turnkeep.store.facade import Store
from turnkeep.store.step_commit import StepCommit

CUSTOMERS = ("acme", "globex", "initech")
CHANNELS = ("email", "chat")


@dataclass
class Seeded:
    """A turn the test admitted, as the test knows it."""

    tenant: str
    session_id: str
    turn_id: str
    agent: str
    state: str
    project: str | None
    #: the subject that owns the project (None: no project)
    owner: str | None
    metadata: dict[str, str]
    session_metadata: dict[str, str]
    error: str | None = None
    created_at: datetime | None = None


@dataclass
class World:
    turns: list[Seeded] = field(default_factory=list)

    def sessions(self) -> dict[tuple[str, str], Seeded]:
        """Each session's first turn (its session metadata and project)."""
        first: dict[tuple[str, str], Seeded] = {}
        for t in self.turns:
            first.setdefault((t.tenant, t.session_id), t)
        return first


@pytest.fixture(scope="module")
def api(service_env: dict[str, str]) -> Iterator[Api]:
    with serve_api(service_env, agents="tests.agents") as handle:
        yield handle


@pytest.fixture(scope="module")
def world(api: Api, store: Store) -> World:
    """Twelve sessions in tenant a (alice's, some in alice's project, some in carol's),
    four in tenant b, 2-3 turns each: completed, failed (two codes), cancelled, queued."""
    run = uuid.uuid4().hex[:6]
    w = World()
    alice, carol, bob = api.client("a"), api.client("a-member"), api.client("b")
    for client, pid in ((alice, f"pa-{run}"), (carol, f"pc-{run}")):
        r = client.post("/v1/projects", json={}, headers={"Idempotency-Key": pid})
        assert r.status_code == 201, r.text
    plan: list[tuple[str, httpx.Client, str, str | None, str | None]] = []
    for i in range(12):
        project, owner = (
            (f"pa-{run}", "alice")
            if i % 4 == 1
            else (f"pc-{run}", "carol")
            if i % 4 == 3
            else (None, None)
        )
        client = carol if owner == "carol" else alice
        plan.append((api.tenant_a, client, f"se-a{i:02d}-{run}", project, owner))
    for i in range(4):
        plan.append((api.tenant_b, bob, f"se-b{i:02d}-{run}", None, None))
    n = 0
    for s, (tenant, client, sid, project, owner) in enumerate(plan):
        session_metadata = {"team": ("red", "blue")[s % 2], "run": run}
        for k in range(2 + s % 2):
            n += 1
            tid = f"t{k}"
            agent = ("counter", "asker")[s // 2 % 2]  # a session is one agent's
            metadata = {"customer": CUSTOMERS[n % 3], "channel": CHANNELS[n % 2], "run": run}
            if n % 5 == 0:
                metadata = {"run": run}  # fewer labels
            extra: dict[str, Any] = {"metadata": metadata}
            if k == 0:
                extra["session_metadata"] = session_metadata
            if project is not None:
                extra["project"] = project
            r = admit(client, sid, tid, agent=agent, text=f"turn {n}", **extra)
            assert r.status_code == 202, r.text
            seeded = Seeded(
                tenant, sid, tid, agent, "queued", project, owner, metadata, session_metadata
            )
            seeded.created_at = datetime.fromisoformat(r.json()["created_at"])
            w.turns.append(seeded)
    # states: the lane runs one turn at a time, so each session's turns settle in order
    # (completed, failed or cancelled) and its last one stays queued or is cancelled
    for t in w.turns:
        last = t is [x for x in w.turns if x.session_id == t.session_id][-1]
        i = w.turns.index(t)
        if last and i % 3 != 0:
            continue  # stays queued
        if i % 3 == 1 or last:
            client = api.client("b") if t.tenant == api.tenant_b else api.client("a")
            if t.owner == "carol":
                client = api.client("a-member")
            r = client.post(f"/v1/sessions/{t.session_id}/turns/{t.turn_id}/cancel")
            assert r.status_code in (200, 202) and r.json()["state"] == "cancelled", r.text
            t.state = "cancelled"
            continue
        stepper = Stepper(store, None, t.tenant, t.session_id, t.turn_id)
        stepper.start(publish=False)
        if i % 3 == 2 and i % 2 == 0:
            t.error = ("model_failed", "budget_exceeded")[i % 4 // 2]
            store.turns.append(
                t.tenant,
                t.session_id,
                stepper.fence,
                StepCommit(
                    turn_id=t.turn_id,
                    revision=stepper.revision,
                    state=TurnState.FAILED,
                    type=EventType.TURN_FAILED,
                    data={"error": {"code": t.error, "message": "seeded"}},
                    error={"code": t.error, "message": "seeded"},
                ),
            )
            t.state = "failed"
        else:
            stepper.complete({"text": "done"}, publish=False)
            t.state = "completed"
    states = {t.state for t in w.turns}
    assert states == {"queued", "completed", "failed", "cancelled"}, states
    return w


def _walk(
    client: httpx.Client, path: str, params: dict[str, Any], key: str
) -> list[dict[str, Any]]:
    """Every page of a search, ``limit`` small so it takes several; each row once."""
    found: list[dict[str, Any]] = []
    before = None
    for _ in range(200):
        query = {**params, **({"after": before} if before else {})}
        r = client.get(path, params=query)
        assert r.status_code == 200, r.text
        page = r.json()
        assert len(page[key]) <= int(params.get("limit", 50))
        found += page[key]
        before = page["next"]
        if before is None:
            ids = [(x["session_id"], x.get("turn_id")) for x in found]
            assert len(ids) == len(set(ids)), "a row on two pages"
            return found
    raise AssertionError("the pages never ended")


def _expect(
    w: World, api: Api, tenant: str, subject: str, keep: Callable[[Seeded], bool]
) -> set[tuple[str, str]]:
    return {
        (t.session_id, t.turn_id)
        for t in w.turns
        if t.tenant == tenant and (t.owner is None or t.owner == subject) and keep(t)
    }


def _run_of(w: World) -> str:
    return w.turns[0].metadata["run"]


def test_searches_return_exactly_the_matching_turns_across_pages(api: Api, world: World) -> None:
    run = _run_of(world)
    a, tenant = api.client("a"), api.tenant_a
    cut = sorted(t.created_at for t in world.turns if t.tenant == tenant)[10]
    cases: list[tuple[dict[str, Any], Callable[[Seeded], bool]]] = [
        ({"metadata": f"run={run}"}, lambda t: True),
        (
            {"metadata": [f"run={run}", "customer=acme"]},
            lambda t: t.metadata.get("customer") == "acme",
        ),
        (
            {"metadata": ["customer=globex", "channel=chat", f"run={run}"]},
            lambda t: (
                t.metadata.get("customer") == "globex" and t.metadata.get("channel") == "chat"
            ),
        ),
        ({"metadata": f"run={run}", "state": "failed"}, lambda t: t.state == "failed"),
        (
            {"metadata": f"run={run}", "state": ["cancelled", "queued"]},
            lambda t: t.state in ("cancelled", "queued"),
        ),
        ({"metadata": f"run={run}", "agent": "asker"}, lambda t: t.agent == "asker"),
        (
            {"metadata": f"run={run}", "error": "model_failed"},
            lambda t: t.error == "model_failed",
        ),
        (
            {"metadata": f"run={run}", "created_since": cut.isoformat()},
            lambda t: t.created_at >= cut,
        ),
        (
            {"metadata": f"run={run}", "created_until": cut.isoformat()},
            lambda t: t.created_at < cut,
        ),
        (
            {"metadata": f"run={run}", "project": _project(world, "alice")},
            lambda t: t.project == _project(world, "alice"),
        ),
        # no metadata: the other statement, over the tenant's every turn of this run
        ({"state": "failed"}, lambda t: t.state == "failed"),
        ({"error": "budget_exceeded"}, lambda t: t.error == "budget_exceeded"),
        ({"project": _project(world, "alice")}, lambda t: t.project == _project(world, "alice")),
    ]
    for params, keep in cases:
        for limit in (2, 5):
            rows = _walk(a, "/v1/turns", {**params, "limit": limit}, "turns")
            got = {(r["session_id"], r["turn_id"]) for r in rows if r["metadata"].get("run") == run}
            assert got == _expect(world, api, tenant, "alice", keep), params
            # newest first, and every row names this tenant's sessions only
            stamps = [(r["created_at"]) for r in rows]
            assert stamps == sorted(stamps, reverse=True), params
    # a found turn says what it carries
    row = _walk(a, "/v1/turns", {"metadata": [f"run={run}", "customer=acme"]}, "turns")[0]
    seeded = next(
        t for t in world.turns if (t.session_id, t.turn_id) == (row["session_id"], row["turn_id"])
    )
    assert row["metadata"] == seeded.metadata and row["state"] == seeded.state


def _project(world: World, owner: str) -> str:
    return next(t.project for t in world.turns if t.owner == owner and t.project)  # type: ignore[return-value]


def test_another_tenants_and_another_owners_turns_never_appear(api: Api, world: World) -> None:
    run = _run_of(world)
    mine = {(t.session_id, t.turn_id) for t in world.turns if t.tenant == api.tenant_a}
    theirs = {(t.session_id, t.turn_id) for t in world.turns if t.tenant == api.tenant_b}
    b_rows = _walk(api.client("b"), "/v1/turns", {"metadata": f"run={run}", "limit": 3}, "turns")
    assert {(r["session_id"], r["turn_id"]) for r in b_rows} == theirs
    a_rows = _walk(api.client("a"), "/v1/turns", {"limit": 500}, "turns")
    assert not {(r["session_id"], r["turn_id"]) for r in a_rows} & theirs
    # carol's project's turns are hers: alice's searches never show them, carol's do
    carols = {(t.session_id, t.turn_id) for t in world.turns if t.owner == "carol"}
    assert carols and not {(r["session_id"], r["turn_id"]) for r in a_rows} & carols
    carol = api.client("a-member")
    rows = _walk(carol, "/v1/turns", {"project": _project(world, "carol"), "limit": 2}, "turns")
    assert {(r["session_id"], r["turn_id"]) for r in rows} == carols
    # alice naming carol's project finds nothing, as for a project that does not exist
    r = api.client("a").get("/v1/turns", params={"project": _project(world, "carol")})
    assert r.status_code == 200 and r.json()["turns"] == []
    assert mine - carols <= {(r["session_id"], r["turn_id"]) for r in a_rows}


def test_sessions_are_searched_by_their_metadata_state_and_project(api: Api, world: World) -> None:
    run = _run_of(world)
    a = api.client("a")
    firsts = world.sessions()

    def expect(keep: Callable[[Seeded], bool]) -> set[str]:
        return {
            sid
            for (tenant, sid), t in firsts.items()
            if tenant == api.tenant_a and t.owner in (None, "alice") and keep(t)
        }

    def state_of(sid: str) -> str:
        active = [t for t in world.turns if t.session_id == sid and t.state in ("queued",)]
        return "queued" if active else "idle"

    cases: list[tuple[dict[str, Any], Callable[[Seeded], bool]]] = [
        ({"metadata": f"run={run}"}, lambda t: True),
        ({"metadata": [f"run={run}", "team=red"]}, lambda t: t.session_metadata["team"] == "red"),
        ({"metadata": f"run={run}", "state": "idle"}, lambda t: state_of(t.session_id) == "idle"),
        (
            {"metadata": f"run={run}", "state": "queued"},
            lambda t: state_of(t.session_id) == "queued",
        ),
        (
            {"metadata": f"run={run}", "project": _project(world, "alice")},
            lambda t: t.project is not None,
        ),
        ({"metadata": f"run={run}", "agent": "counter"}, lambda t: t.agent == "counter"),
    ]
    for params, keep in cases:
        rows = _walk(a, "/v1/sessions", {**params, "limit": 2}, "sessions")
        assert {r["session_id"] for r in rows} == expect(keep), params
        for r in rows:
            assert r["metadata"]["run"] == run and r["state"] == state_of(r["session_id"])
    # without filters the sessions' plain listing, unchanged
    assert api.client("a").get("/v1/sessions", params={"limit": 1}).status_code == 200


@pytest.mark.parametrize(
    ("path", "params", "where"),
    [
        ("/v1/turns", {"staet": "failed"}, ["query", "staet"]),
        ("/v1/turns", {"state": "sleeping"}, ["query", "state", "0"]),
        ("/v1/turns", {"metadata": "no-equals-sign"}, ["query", "metadata", "0"]),
        ("/v1/turns", {"metadata": "bad key=x"}, ["query", "metadata", "0"]),
        ("/v1/turns", {"metadata": ["a=1", "a=2"]}, ["query", "metadata"]),
        ("/v1/turns", {"created_since": "2026-01-01T00:00:00"}, ["query", "created_since"]),
        (
            "/v1/turns",
            {"created_since": "2026-02-01T00:00:00Z", "created_until": "2026-01-01T00:00:00Z"},
            ["query"],
        ),
        ("/v1/turns", {"after": "bm90LWEtY3Vyc29y"}, ["query", "after"]),
        ("/v1/turns", {"limit": "0"}, ["query", "limit"]),
        ("/v1/turns", {"error": "Not A Code"}, ["query", "error"]),
        ("/v1/sessions", {"agent_version": "3"}, ["query", "agent_version"]),
        ("/v1/sessions", {"state": "failed_ish"}, ["query", "state", "0"]),
    ],
)
def test_bad_filters_are_typed_422(
    api: Api, path: str, params: dict[str, Any], where: list[str]
) -> None:
    r = api.client("a").get(path, params=params)
    assert r.status_code == 422, r.text
    body = r.json()
    assert body["code"] == "validation_error"
    locs = [e["loc"][: len(where)] for e in body["errors"]]
    assert where in locs, body


def test_metadata_is_bounded_part_of_the_identity_and_set_once_per_session(
    api: Api, sid: str
) -> None:
    a = api.client("a")
    too_many = {f"k{i}": "v" for i in range(17)}
    for bad in (too_many, {"bad key": "v"}, {"k": "x" * 257}, {"k": 1}, {"k": "a\x00b"}):
        r = admit(a, sid, "t-bad", metadata=bad)
        assert r.status_code == 422 and r.json()["code"] == "validation_error", (bad, r.text)
        assert r.json()["errors"][0]["loc"][:2] == ["body", "metadata"]
    assert a.get(f"/v1/sessions/{sid}").status_code == 404  # nothing admitted
    labels = {"customer": "acme", "ticket": "T-1"}
    first = admit(a, sid, "t1", metadata=labels, session_metadata={"team": "red"})
    assert first.status_code == 202 and first.json()["metadata"] == labels
    # a replay with the same labels is the stored turn; other ones, or none, a conflict
    assert admit(a, sid, "t1", metadata=labels, session_metadata={"team": "red"}).status_code == 200
    for other in ({"metadata": {"customer": "globex"}}, {}, {"metadata": labels}):
        r = admit(a, sid, "t1", **other)
        assert r.status_code == 409 and r.json()["code"] == "idempotency_conflict", (other, r.text)
    # the session's labels were set by its first turn; a later turn may leave them out
    assert admit(a, sid, "t2").status_code == 202
    assert admit(a, sid, "t3", session_metadata={"team": "red"}).status_code == 202
    r = admit(a, sid, "t4", session_metadata={"team": "blue"})
    assert r.status_code == 409 and r.json()["code"] == "session_metadata_conflict", r.text
    assert a.get(f"/v1/sessions/{sid}/turns/t4").status_code == 404
    session = a.get(f"/v1/sessions/{sid}").json()
    assert session["metadata"] == {"team": "red"} and session["head_seq"] == 3
    # another agent's session is refused as such, whatever the metadata says
    r = admit(a, sid, "t5", agent="counter", session_metadata={"team": "blue"})
    assert r.status_code == 409 and r.json()["code"] == "session_agent_conflict", r.text


def test_a_fork_and_a_rerun_keep_their_metadata(api: Api, store: Store, sid: str) -> None:
    a = api.client("a")
    tag = uuid.uuid4().hex[:8]
    r = admit(a, sid, "t1", metadata={"case": tag}, session_metadata={"batch": tag})
    assert r.status_code == 202, r.text
    stepper = Stepper(store, None, api.tenant_a, sid, "t1")
    stepper.start(publish=False)
    stepper.model("thinking", publish=False)
    stepper.complete({"text": "done"}, publish=False)
    fork = a.post(
        f"/v1/sessions/{sid}/fork", json={"at_seq": 4}, headers={"Idempotency-Key": f"{sid}-f"}
    )
    assert fork.status_code == 201, fork.text
    rerun = a.post(f"/v1/sessions/{sid}/turns/t1/rerun", json={"from_step": 1})
    assert rerun.status_code in (201, 202), rerun.text
    found = _walk(a, "/v1/turns", {"metadata": f"case={tag}", "limit": 1}, "turns")
    assert {(t["session_id"], t["turn_id"]) for t in found} == {
        (sid, "t1"),
        (f"{sid}-f", "t1"),
        (sid, rerun.json()["turn_id"]),
    }
    sessions = _walk(a, "/v1/sessions", {"metadata": f"batch={tag}"}, "sessions")
    assert {s["session_id"] for s in sessions} == {sid, f"{sid}-f"}


def test_the_client_pages_the_same_sync_and_async(api: Api, world: World) -> None:
    import anyio

    run = _run_of(world)
    with Client(api.url, api.token_a) as tk:
        page = tk.search.turns(metadata={"run": run}, state="failed", limit=1)
        assert len(page.turns) == 1 and page.next is not None
        every = list(tk.search.all_turns(metadata={"run": run, "customer": "acme"}, page=2))
        sessions = list(
            tk.search.all_sessions(metadata={"run": run}, state=["idle", "queued"], page=3)
        )
    expected = _expect(
        world, api, api.tenant_a, "alice", lambda t: t.metadata.get("customer") == "acme"
    )
    assert {(t.session_id, t.turn_id) for t in every} == expected
    assert (
        len(sessions)
        == len({s.session_id for s in sessions})
        == len(
            [
                1
                for (tn, _), t in world.sessions().items()
                if tn == api.tenant_a and t.owner != "carol"
            ]
        )
    )

    async def walk() -> set[tuple[str, str]]:
        async with AsyncClient(api.url, api.token_a) as tk:
            return {
                (t.session_id, t.turn_id)
                async for t in tk.search.all_turns(
                    metadata={"run": run, "customer": "acme"}, page=2
                )
            }

    assert anyio.run(walk) == expected
    with Client(api.url, api.token_a) as tk, pytest.raises(ValueError, match="aware"):
        tk.search.turns(created_since=datetime(2026, 1, 1))  # naive: refused before sending
