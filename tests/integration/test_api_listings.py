"""The listings and the timeline the CLI and the console read: the tenant's sessions,
a session's turns (keyset pages, newest first), a turn's timeline, and the agents
with each one's default for the tenant, each through the typed client, scoped by the
token's tenant."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator

import pytest

from tests.integration.api_server import Api, Stepper, admit, serve_api
from turnkeep.client import ApiError, Client
from turnkeep.models import AgentInfo
from turnkeep.store.facade import Store


@pytest.fixture(scope="module")
def api(service_env: dict[str, str]) -> Iterator[Api]:
    with serve_api(service_env) as handle:
        yield handle


@pytest.fixture
def tk(api: Api) -> Iterator[Client]:
    with Client(api.url, api.token_a) as client:
        yield client


def _all_sessions(tk: Client, limit: int) -> list[str]:
    seen, before = [], None
    while True:
        page = tk.sessions.list(limit=limit, after=before)
        assert len(page.sessions) <= limit
        seen += [s.session_id for s in page.sessions]
        if page.next is None:
            return seen
        before = page.next


def test_sessions_are_listed_newest_first_in_pages_for_their_tenant_only(
    api: Api, tk: Client
) -> None:
    c = api.client()
    mine = [f"ls-{uuid.uuid4().hex[:10]}" for _ in range(3)]
    for sid in mine:
        assert admit(c, sid).status_code == 202
    listed = _all_sessions(tk, limit=2)
    assert len(listed) == len(set(listed))
    # newest first: the three appear in the reverse of their admission order
    assert [s for s in listed if s in mine] == mine[::-1]
    first = tk.sessions.list(limit=1).sessions[0]
    assert (first.session_id, first.state, first.active_turn) == (
        mine[-1],
        "queued",
        first.active_turn,
    )
    assert first.active_turn is not None
    with Client(api.url, api.token_b) as other:
        assert not set(_all_sessions(other, limit=50)) & set(mine)


def test_a_bad_cursor_is_a_typed_422(api: Api, tk: Client) -> None:
    for cursor in ("bm90LWEtY3Vyc29y", "!!"):
        r = api.client().get("/v1/sessions", params={"after": cursor})
        assert r.status_code == 422 and r.json()["code"] == "validation_error"
    with pytest.raises(ApiError) as err:
        tk.turns.list("no-such-session-here", after="x1")
    assert err.value.status == 422


def test_turns_are_paged_newest_first_and_another_tenants_session_is_missing(
    api: Api, tk: Client, sid: str
) -> None:
    c = api.client()
    for tid in ("t1", "t2", "t3"):
        assert admit(c, sid, tid).status_code == 202
    page = tk.turns.list(sid, limit=2)
    assert [t.turn_id for t in page.turns] == ["t3", "t2"] and page.next is not None
    rest = tk.turns.list(sid, limit=2, after=page.next)
    assert [t.turn_id for t in rest.turns] == ["t1"] and rest.next is None
    assert api.client("b").get(f"/v1/sessions/{sid}/turns").status_code == 404
    assert c.get("/v1/sessions/nobody-here/turns").status_code == 404


def test_the_timeline_shows_attempts_steps_and_fences_without_content(
    api: Api, tk: Client, store: Store, sid: str
) -> None:
    assert admit(api.client(), sid, "t1", text="a private prompt").status_code == 202
    stepper = Stepper(store, None, api.tenant_a, sid, "t1")
    stepper.start()
    call = {"id": "c1", "name": "weather", "arguments": {"city": "Paris"}}
    stepper.model("checking the weather", [call])
    stepper.tool("c1", "a private tool result")
    stepper.model("it is sunny")
    stepper.complete({"answer": "sunny"})

    timeline = tk.turns.timeline(sid, "t1")
    assert timeline.turn.state == "completed"
    assert [(a.attempt, a.fence) for a in timeline.attempts] == [(1, stepper.fence)]
    steps = [(s.step, s.kind, s.attempt, s.fence, s.outcome) for s in timeline.steps]
    assert steps == [
        (1, "model", 1, stepper.fence, "ok"),
        (2, "tool", 1, stepper.fence, "ok"),
        (3, "model", 1, stepper.fence, "ok"),
    ]
    assert timeline.steps[1].name == "weather"
    assert all(s.duration_ms is not None and s.duration_ms >= 0 for s in timeline.steps)
    assert timeline.waits == [] and timeline.elapsed_ms >= 0
    raw = api.client().get(f"/v1/sessions/{sid}/turns/t1/timeline")
    for private in ("private prompt", "private tool result", "sunny", "Paris"):
        assert private not in json.dumps(raw.json()["steps"])
    assert api.client("b").get(f"/v1/sessions/{sid}/turns/t1/timeline").status_code == 404
    assert api.client().get(f"/v1/sessions/{sid}/turns/nope/timeline").status_code == 404


def test_the_agents_are_listed_with_each_tenants_default(api: Api, tk: Client, sid: str) -> None:
    """``GET /v1/agents`` through the typed client: a gated agent's default is the
    version the tenant last promoted (before any, its first declared), never merely
    its latest; another tenant's is its own; the agent's versions say the same, and a
    turn naming no version is admitted on the default listed."""

    def listed(client: Client) -> dict[str, AgentInfo]:
        return {a.name: a for a in client.agents.list().agents}

    before = listed(tk)
    gated, demo = before["gated"], before["demo"]
    assert (gated.gated, gated.latest.version, gated.default.version) == (True, "2", "1")
    assert [(v.version, v.latest, v.default) for v in gated.versions] == [
        ("1", False, True),
        ("2", True, False),
    ]
    assert (demo.gated, demo.default) == (False, demo.latest)
    assert [(v.latest, v.default) for v in demo.versions] == [(True, True)]

    promoted = api.client("a-admin").post("/v1/agents/gated/versions/2/promote")
    assert promoted.status_code == 200, promoted.text
    after = listed(tk)["gated"]
    assert (after.default.version, after.latest.version) == ("2", "2")
    assert after.default.definition_hash == after.versions[1].definition_hash
    assert [(v.version, v.default) for v in after.versions] == [("1", False), ("2", True)]
    assert [(v.version, v.default) for v in tk.agents.versions("gated").versions] == [
        ("1", False),
        ("2", True),
    ]
    with Client(api.url, api.token_b) as other:
        theirs = listed(other)["gated"]
        assert [(v.version, v.default) for v in other.agents.versions("gated").versions] == [
            ("1", True),
            ("2", False),
        ]
    assert theirs.default.version == "1"
    # what the listing says is what an admission that names no version gets
    mine = admit(api.client(), sid, agent="gated", text="hi")
    assert mine.status_code == 202 and mine.json()["agent_version"] == "2"
    other_turn = admit(api.client("b"), sid, agent="gated", text="hi")
    assert other_turn.status_code == 202 and other_turn.json()["agent_version"] == "1"
