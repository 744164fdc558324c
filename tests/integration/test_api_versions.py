"""Agent versions over real HTTP (api/http/agents.py, docs/deploy.md): two API
processes of two builds on one database, as during a rolling deploy. A replay that
names no version is the stored turn whichever build answers; naming another version
is a conflict; the declared agents and each definition's turns are listed; an
operator's upgrade is an admin's, flags the turn, and a stranger sees nothing."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from tests.deploys import build_a, build_b
from tests.integration.api_server import Api, admit, serve_api
from turnkeep.store.facade import Store


@pytest.fixture(scope="module")
def api_a(service_env: dict[str, str]) -> Iterator[Api]:
    with serve_api(service_env, agents="tests.deploys.build_a") as handle:
        yield handle


@pytest.fixture(scope="module")
def api_b(service_env: dict[str, str], api_a: Api) -> Iterator[Api]:
    # build B, with build A's tokens: the same tenants, the other agents module
    with serve_api(
        service_env, agents="tests.deploys.build_b", tokens=api_a.settings.auth.tokens
    ) as b:
        yield b


def _as(api: Api, on: Api, token: str) -> httpx.Client:
    """A client of ``on``'s server holding a token of ``api``'s tenants."""
    c = httpx.Client(base_url=on.url, headers={"Authorization": f"Bearer {token}"}, timeout=20)
    on.clients.append(c)
    return c


SUPPORT_1, SUPPORT_2 = build_a.AGENTS[0], build_b.AGENTS[0]
KEEPER_1, KEEPER_2 = build_b.AGENTS[1], build_b.AGENTS[2]


def test_a_replay_across_a_deploy_is_the_stored_turn(
    api_a: Api, api_b: Api, store: Store, sid: str
) -> None:
    old = api_a.client()
    new = _as(api_a, api_b, api_a.token_a)
    first = admit(old, sid, "dep-1", agent="support", text="tool=count")
    assert first.status_code == 202, first.text
    assert first.json()["agent_version"] == "1"
    again = admit(new, sid, "dep-1", agent="support", text="tool=count")
    assert again.status_code == 200, again.text
    assert again.json()["turn_id"] == "dep-1" and again.json()["agent_version"] == "1"
    stored = store.reads.get_turn(api_a.tenant_a, sid, "dep-1")
    assert stored.agent_hash == SUPPORT_1.definition_hash
    # the same id naming build B's version is another request
    named = admit(new, sid, "dep-1", agent="support", text="tool=count", agent_version="2")
    assert named.status_code == 409 and named.json()["code"] == "idempotency_conflict"
    # other text under the same id is a conflict on either build
    other = admit(new, sid, "dep-1", agent="support", text="tool=stamp")
    assert other.status_code == 409


def test_a_turn_may_name_a_declared_version(api_a: Api, api_b: Api, store: Store, sid: str) -> None:
    new = _as(api_a, api_b, api_a.token_a)
    r = admit(new, sid, "keep-1", agent="keeper", text="tool=count", agent_version="1")
    assert r.status_code == 202, r.text
    assert r.json()["agent_version"] == "1"
    turn = store.reads.get_turn(api_a.tenant_a, sid, "keep-1")
    assert (turn.agent_hash, turn.on_deploy) == (KEEPER_1.definition_hash, "pinned")
    r = admit(new, sid, "keep-2", agent="keeper", text="tool=count")
    assert r.status_code == 202 and r.json()["agent_version"] == "2"
    r = admit(new, sid, "keep-9", agent="keeper", text="x", agent_version="9")
    assert r.status_code == 422 and r.json()["code"] == "unknown_agent"


def test_the_agents_and_each_definitions_turns_are_listed(api_a: Api, api_b: Api, sid: str) -> None:
    old = api_a.client()
    new = _as(api_a, api_b, api_a.token_a)
    assert admit(old, sid, "list-1", agent="support", text="tool=count").status_code == 202
    agents = {a["name"]: a for a in new.get("/v1/agents").json()["agents"]}
    assert sorted(agents) == ["keeper", "ledger", "support"]
    keeper = agents["keeper"]
    assert keeper["latest"] == {"version": "2", "definition_hash": KEEPER_2.definition_hash}
    assert [(v["version"], v["latest"], v["on_deploy"]) for v in keeper["versions"]] == [
        ("1", False, "pinned"),
        ("2", True, "pinned"),
    ]
    versions = new.get("/v1/agents/support/versions").json()
    by_hash = {v["definition_hash"]: v for v in versions["versions"]}
    gone = by_hash[SUPPORT_1.definition_hash]
    assert (gone["declared"], gone["version"], gone["latest"]) == (False, None, False)
    assert gone["turns"].get("queued", 0) >= 1
    now = by_hash[SUPPORT_2.definition_hash]
    assert (now["declared"], now["version"], now["latest"]) == (True, "2", True)
    # another tenant's turns are not counted; an agent nobody knows is missing
    stranger = _as(api_a, api_b, api_a.token_b)
    theirs = stranger.get("/v1/agents/support/versions").json()["versions"]
    assert all(v["turns"] == {} for v in theirs)
    assert new.get("/v1/agents/nobody/versions").status_code == 404


def test_an_upgrade_is_an_admins_and_flags_the_turn(
    api_a: Api, api_b: Api, store: Store, sid: str
) -> None:
    old = api_a.client()
    new = _as(api_a, api_b, api_a.token_a)
    admin = _as(api_a, api_b, api_a.more["a-admin"])
    assert admit(old, sid, "up-1", agent="support", text="tool=count").status_code == 202
    assert admit(old, sid, "up-2", agent="support", text="tool=count").status_code == 202
    path = f"/v1/sessions/{sid}/turns/up-1/upgrade"
    r = new.post(path)
    assert r.status_code == 403 and r.json()["code"] == "forbidden_role"
    assert not store.reads.get_turn(api_a.tenant_a, sid, "up-1").upgrade_requested
    r = admin.post(path)
    assert r.status_code == 202 and r.json() == {"turn_id": "up-1", "upgrade_requested": True}
    assert store.reads.get_turn(api_a.tenant_a, sid, "up-1").upgrade_requested
    # every active turn on the definition: the one not flagged yet
    bulk = f"/v1/agents/support/versions/{SUPPORT_1.definition_hash}/upgrade"
    r = admin.post(bulk)
    assert r.status_code == 202 and r.json()["requested"] >= 1
    assert store.reads.get_turn(api_a.tenant_a, sid, "up-2").upgrade_requested
    assert admin.post(bulk).json() == {"requested": 0}
    # missing, ended, another tenant's
    assert admin.post(f"/v1/sessions/{sid}/turns/nope/upgrade").status_code == 404
    assert admin.post(f"/v1/sessions/{sid}/turns/up-2/cancel").status_code == 202
    r = admin.post(f"/v1/sessions/{sid}/turns/up-2/upgrade")
    assert r.status_code == 409 and r.json()["code"] == "turn_not_active"
    stranger = _as(api_a, api_b, api_a.token_b)
    assert stranger.post(path).status_code in (403, 404)
