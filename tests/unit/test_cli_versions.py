"""``turnkeep agents``, ``versions``, ``upgrade`` and ``submit --agent-version``, run
in-process (``cli.main``) against a fake API: the client's httpx transport is a
MockTransport answering by route. Output is captured, so it is the plain text a pipe
gets; each test checks what is printed and what was sent."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from turnkeep import cli
from turnkeep.cli import output
from turnkeep.client import Client

SID = "s-1"
NOW = "2026-01-02T03:04:05+00:00"
H1, H2, H0 = "a1" * 32, "b2" * 32, "c3" * 32
AGENTS = {
    "agents": [
        {
            "name": "billing",
            "latest": {"version": "7", "definition_hash": H0},
            "default": {"version": "7", "definition_hash": H0},
            "gated": False,
            "versions": [
                {
                    "version": "7",
                    "definition_hash": H0,
                    "latest": True,
                    "default": True,
                    "on_deploy": "upgrade",
                }
            ],
        },
        {
            # gated: the tenant's default is the version it promoted, not the latest
            "name": "support",
            "latest": {"version": "2", "definition_hash": H2},
            "default": {"version": "1", "definition_hash": H1},
            "gated": True,
            "versions": [
                {
                    "version": "1",
                    "definition_hash": H1,
                    "latest": False,
                    "default": True,
                    "on_deploy": "pinned",
                },
                {
                    "version": "2",
                    "definition_hash": H2,
                    "latest": True,
                    "default": False,
                    "on_deploy": "upgrade",
                },
            ],
        },
    ]
}
VERSIONS = {
    "name": "support",
    "versions": [
        {
            "definition_hash": H1,
            "version": "1",
            "declared": True,
            "latest": False,
            "default": True,
            "turns": {"waiting": 1, "running": 2, "queued": 0},
            "workers": [],
        },
        {
            "definition_hash": H2,
            "version": "2",
            "declared": True,
            "latest": True,
            "default": False,
            "turns": {},
            "workers": [
                {"worker": "celery@w-2a", "host": "w-2a", "seen_at": 1767323045.0},
                {"worker": "celery@w-2b", "host": "w-2b", "seen_at": 1767323046.0},
            ],
        },
        {
            "definition_hash": "a1ff" + "0" * 60,
            "version": None,
            "declared": False,
            "latest": False,
            "default": False,
            "turns": {"needs_reconciliation": 1},
            "workers": [{"worker": "celery@old", "host": "old", "seen_at": 1767323000.0}],
        },
    ],
}

Route = tuple[str, str]
Capture = pytest.CaptureFixture[str]


class FakeAPI:
    """Answers each (method, path) with the response given for it; records requests."""

    def __init__(self, routes: dict[Route, httpx.Response]) -> None:
        self.routes = routes
        self.seen: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.seen.append(request)
        key = (request.method, request.url.path)
        if key not in self.routes:
            return problem(404, "not_found")
        return self.routes[key]

    @property
    def calls(self) -> list[Route]:
        return [(r.method, r.url.path) for r in self.seen]


def problem(status: int, code: str) -> httpx.Response:
    body = {"status": status, "code": code, "detail": f"a {code}"}
    return httpx.Response(status, json=body, headers={"content-type": "application/problem+json"})


def turn_json(**extra: Any) -> dict[str, Any]:
    return {
        "session_id": SID,
        "turn_id": "t-1",
        "state": "queued",
        "agent": "support",
        "attempt": 0,
        "result": None,
        "error": None,
        "accepted_seq": 1,
        "created_at": NOW,
        "updated_at": NOW,
        **extra,
    }


Api = Callable[[dict[Route, httpx.Response]], "FakeAPI"]


@pytest.fixture
def api(monkeypatch: pytest.MonkeyPatch) -> Iterator[Api]:
    """``api({(method, path): response})``: every client the CLI makes talks to it."""
    for name in ("FORCE_COLOR", "TTY_COMPATIBLE", "COLUMNS", "TURNKEEP_URL", "TURNKEEP_TOKEN"):
        monkeypatch.delenv(name, raising=False)

    def install(routes: dict[Route, httpx.Response]) -> FakeAPI:
        fake = FakeAPI(routes)
        transport = httpx.MockTransport(fake)
        monkeypatch.setattr(output, "Client", functools.partial(Client, transport=transport))
        return fake

    yield install


def run(capsys: Capture, *argv: str) -> tuple[int, str, str]:
    """``turnkeep <argv>``: (exit status, stdout, stderr)."""
    try:
        code = cli.main(["--url", "http://api", "--token", "tok", *argv])
    except SystemExit as exc:
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def rows(text: str) -> list[list[str]]:
    return [line.split() for line in text.splitlines() if line.strip()]


def test_agents_lists_every_version_with_its_short_hash(api: Api, capsys: Capture) -> None:
    fake = api({("GET", "/v1/agents"): httpx.Response(200, json=AGENTS)})
    code, out, err = run(capsys, "agents")
    assert (code, err) == (0, "")
    assert "\x1b" not in out
    assert rows(out) == [
        ["agent", "version", "hash", "latest", "default", "on_deploy"],
        ["billing", "7", H0[:12], "yes", "yes", "upgrade"],
        ["support", "1", H1[:12], "no", "yes", "pinned"],
        ["support", "2", H2[:12], "yes", "no", "upgrade"],
    ]
    assert fake.calls == [("GET", "/v1/agents")]
    assert fake.seen[0].headers["authorization"] == "Bearer tok"
    # --json: the API's own document
    code, out, _ = run(capsys, "agents", "--json")
    assert code == 0 and json.loads(out) == AGENTS


def test_agents_says_so_when_none_is_declared(api: Api, capsys: Capture) -> None:
    api({("GET", "/v1/agents"): httpx.Response(200, json={"agents": []})})
    code, out, _ = run(capsys, "agents")
    assert (code, out) == (0, "no agents declared\n")


def test_versions_shows_each_definitions_turns_and_workers(api: Api, capsys: Capture) -> None:
    fake = api({("GET", "/v1/agents/support/versions"): httpx.Response(200, json=VERSIONS)})
    code, out, err = run(capsys, "versions", "support")
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0].split() == [
        "hash", "version", "declared", "latest", "default", "turns", "workers",
    ]  # fmt: skip
    # turns in the states' order, a zero count left out; workers counted and named
    assert rows(out)[1:] == [
        [H1[:12], "1", "yes", "no", "yes", "running", "2,", "waiting", "1", "none"],
        [H2[:12], "2", "yes", "yes", "no", "none", "2:", "celery@w-2a,", "celery@w-2b"],
        ["a1ff00000000", "-", "no", "no", "no", "needs_reconciliation", "1", "1:", "celery@old"],
    ]
    assert fake.calls == [("GET", "/v1/agents/support/versions")]
    code, out, _ = run(capsys, "--json", "versions", "support")
    assert code == 0 and json.loads(out) == VERSIONS


def test_versions_of_an_unknown_agent_is_the_apis_problem(api: Api, capsys: Capture) -> None:
    api({})
    code, out, err = run(capsys, "versions", "nobody")
    assert (code, out) == (cli.EXIT_PROBLEM, "")
    assert err == "error: 404 not_found: a not_found\n"


def test_upgrade_one_turn(api: Api, capsys: Capture) -> None:
    answer = {"turn_id": "t-1", "upgrade_requested": True}
    path = f"/v1/sessions/{SID}/turns/t-1/upgrade"
    fake = api({("POST", path): httpx.Response(202, json=answer)})
    code, out, _ = run(capsys, "upgrade", SID, "t-1")
    assert code == 0
    assert out == (
        "turn t-1: upgrade requested; it moves to the newest version of its agent"
        " at its next safe point\n"
    )
    code, out, _ = run(capsys, "upgrade", SID, "t-1", "--json")
    assert code == 0 and json.loads(out) == answer
    assert fake.calls == [("POST", path)] * 2


def test_upgrade_a_terminal_turn_or_without_admin_exits_1_with_the_problem(
    api: Api, capsys: Capture
) -> None:
    path = f"/v1/sessions/{SID}/turns/t-9/upgrade"
    api({("POST", path): problem(409, "turn_not_active")})
    code, _, err = run(capsys, "upgrade", SID, "t-9")
    assert (code, err) == (1, "error: 409 turn_not_active: a turn_not_active\n")
    api({("POST", f"/v1/agents/support/versions/{H1}/upgrade"): problem(403, "forbidden_role")})
    code, _, err = run(capsys, "upgrade", "--agent", "support", "--hash", H1)
    assert (code, err) == (1, "error: 403 forbidden_role: a forbidden_role\n")


def test_upgrade_a_definition_by_its_full_hash_or_a_prefix(api: Api, capsys: Capture) -> None:
    path = f"/v1/agents/support/versions/{H1}/upgrade"
    fake = api(
        {
            ("GET", "/v1/agents/support/versions"): httpx.Response(200, json=VERSIONS),
            ("POST", path): httpx.Response(202, json={"requested": 3}),
        }
    )
    code, out, _ = run(capsys, "upgrade", "--agent", "support", "--hash", H1)
    assert code == 0
    assert out == (
        f"3 turns of support on {H1[:12]} flagged: each moves to the newest version"
        " at its next safe point\n"
    )
    assert fake.calls == [("POST", path)]  # a full hash is sent as it is
    # the 12 hex digits versions shows (upper case too) name the same definition
    code, out, _ = run(capsys, "--json", "upgrade", "--agent", "support", "--hash", H1[:12].upper())
    assert code == 0 and json.loads(out) == {"requested": 3}
    assert fake.calls[1:] == [("GET", "/v1/agents/support/versions"), ("POST", path)]


def test_upgrade_with_a_prefix_naming_no_or_several_definitions_sends_nothing(
    api: Api, capsys: Capture
) -> None:
    fake = api({("GET", "/v1/agents/support/versions"): httpx.Response(200, json=VERSIONS)})
    code, _, err = run(capsys, "upgrade", "--agent", "support", "--hash", "a1")
    assert code == cli.EXIT_PROBLEM
    assert err == "error: agent support has 2 definitions whose hash starts with 'a1'\n"
    code, _, err = run(capsys, "upgrade", "--agent", "support", "--hash", "ffff")
    assert code == cli.EXIT_PROBLEM
    assert err == "error: agent support has no definition whose hash starts with 'ffff'\n"
    assert all(method == "GET" for method, _ in fake.calls)


def test_upgrade_none_flagged_says_there_was_nothing_to_move(api: Api, capsys: Capture) -> None:
    path = f"/v1/agents/support/versions/{H2}/upgrade"
    api({("POST", path): httpx.Response(202, json={"requested": 0})})
    code, out, _ = run(capsys, "upgrade", "--agent", "support", "--hash", H2)
    assert (code, out) == (0, f"no active turn of support on {H2[:12]}: nothing to move\n")


@pytest.mark.parametrize(
    "argv",
    [
        ["upgrade"],
        ["upgrade", SID],
        ["upgrade", "--agent", "support"],
        ["upgrade", "--hash", H1],
        ["upgrade", SID, "t-1", "--agent", "support", "--hash", H1],
        ["upgrade", SID, "t-1", "--hash", H1],
    ],
)
def test_upgrade_takes_a_turn_or_a_definition_never_both(
    api: Api, capsys: Capture, argv: list[str]
) -> None:
    fake = api({})
    code, _, err = run(capsys, *argv)
    assert code == cli.EXIT_USAGE
    assert "give SESSION TURN, or --agent NAME --hash HASH" in err
    assert fake.seen == []


def test_submit_names_the_version_and_shows_the_turn_held(api: Api, capsys: Capture) -> None:
    held = {"reason": "definition_unavailable", "definition_hash": H1}
    path = f"/v1/sessions/{SID}/turns"
    fake = api({("POST", path): httpx.Response(202, json=turn_json(agent_version="1", held=held))})
    code, out, _ = run(capsys, "submit", SID, "support", "hi", "--agent-version", "1")
    assert code == 0
    assert out.splitlines() == [
        "turn t-1  queued  session s-1  agent support@1  attempt 0  seq 1",
        f"  held: definition_unavailable, no live worker serves {H1[:12]}",
    ]
    body = json.loads(fake.seen[0].content)
    assert (body["agent"], body["agent_version"]) == ("support", "1")
    # without the option the API picks the latest: the body does not name one
    run(capsys, "submit", SID, "support", "hi")
    assert "agent_version" not in json.loads(fake.seen[1].content)


def test_submit_an_unknown_version_exits_1_with_the_problem(api: Api, capsys: Capture) -> None:
    api({("POST", f"/v1/sessions/{SID}/turns"): problem(422, "unknown_agent")})
    code, out, err = run(capsys, "submit", SID, "support", "hi", "--agent-version", "9")
    assert (code, out) == (cli.EXIT_PROBLEM, "")
    assert err == "error: 422 unknown_agent: a unknown_agent\n"
