"""The typed client against a fake transport: SSE framing, resume after a dropped
connection, problems as typed errors, the long-poll loop, admission's key, and the
agents' versions and upgrades."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import httpx
import pytest

from turnkeep.client import (
    ApiError,
    AsyncClient,
    Client,
    Delta,
    Event,
    ResyncRequired,
    SSEParser,
    Turn,
    Unreachable,
)

SID = "s-1"
NOW = "2025-01-01T00:00:00+00:00"


def event(seq: int, type: str = "model.completed", turn: str = "t-1") -> dict[str, Any]:
    return {
        "seq": seq,
        "session_id": SID,
        "turn_id": turn,
        "type": type,
        "step": None,
        "data": {},
        "created_at": NOW,
    }


def frame(e: dict[str, Any]) -> str:
    return f"id: {e['seq']}\nevent: {e['type']}\ndata: {json.dumps(e)}\n\n"


def turn_json(state: str = "running", **extra: Any) -> dict[str, Any]:
    return {
        "session_id": SID,
        "turn_id": "t-1",
        "state": state,
        "agent": "demo",
        "attempt": 1,
        "result": None,
        "error": None,
        "accepted_seq": 1,
        "created_at": NOW,
        "updated_at": NOW,
        "cancel_requested": False,
        "pending_input": None,
        **extra,
    }


class Chunks(httpx.SyncByteStream, httpx.AsyncByteStream):
    """A response body that sends its chunks, then fails as a dropped connection."""

    def __init__(self, chunks: list[str], drop: bool) -> None:
        self.chunks = [c.encode() for c in chunks]
        self.drop = drop

    def __iter__(self) -> Iterator[bytes]:
        yield from self.chunks
        if self.drop:
            raise httpx.ReadError("connection reset")

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for c in self.chunks:
            yield c
        if self.drop:
            raise httpx.ReadError("connection reset")


def stream(chunks: list[str], *, drop: bool = False) -> httpx.Response:
    return httpx.Response(
        200, headers={"content-type": "text/event-stream"}, stream=Chunks(chunks, drop)
    )


def problem(status: int, code: str, **extra: Any) -> httpx.Response:
    body = {"status": status, "code": code, "detail": f"a {code}", **extra}
    return httpx.Response(status, json=body, headers={"content-type": "application/problem+json"})


def script(
    *responses: httpx.Response | Exception,
) -> tuple[Callable[..., Any], list[httpx.Request]]:
    """A MockTransport handler answering ``responses`` in order, and the requests seen."""
    seen: list[httpx.Request] = []
    queue = list(responses)

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        answer = queue.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    return handler, seen


def resume_script() -> tuple[Callable[..., Any], list[httpx.Request]]:
    """1 and 2, then the connection drops mid-frame; a 503; 2 again (a duplicate), a
    heartbeat, 3, the server's stream.resume; then 4."""
    return script(
        stream([frame(event(1)), frame(event(2)), "id: 3\nevent: model.comp"], drop=True),
        problem(503, "unavailable"),
        stream(
            [
                frame(event(2)),
                ": heartbeat earliest_seq=1\n\n",
                'event: model.delta\ndata: {"text": "hi"}\n\n',
                frame(event(3)),
                'event: stream.resume\ndata: {"reason": "lagging", "after": 3}\n\n',
            ]
        ),
        stream([frame(event(4, "turn.completed"))]),
    )


def test_events_resume_from_the_last_seq_after_a_drop() -> None:
    handler, seen = resume_script()
    with Client("http://api", "tok", backoff=0.001, transport=httpx.MockTransport(handler)) as c:
        got = []
        for e in c.sessions.events(SID, after=0):
            got.append(e.seq)
            if e.terminal:
                break
    assert got == [1, 2, 3, 4]
    assert [r.headers["last-event-id"] for r in seen] == ["0", "2", "2", "3"]
    assert all(r.headers["authorization"] == "Bearer tok" for r in seen)
    assert seen[0].headers["accept"] == "text/event-stream"


def test_stream_with_deltas_yields_the_live_text_between_committed_events() -> None:
    handler, _ = resume_script()
    with Client("http://api", "tok", backoff=0.001, transport=httpx.MockTransport(handler)) as c:
        got: list[object] = []
        for item in c.sessions.stream(SID, after=0, deltas=True):
            got.append(item.text if isinstance(item, Delta) else item.seq)
            if isinstance(item, Event) and item.terminal:
                break
    assert got == [1, 2, "hi", 3, 4]


def test_stream_token_is_typed() -> None:
    body = {"token": "tkst1.x.y", "expires_at": NOW}
    handler, seen = script(httpx.Response(200, json=body))
    with Client("http://api", "tok", transport=httpx.MockTransport(handler)) as c:
        issued = c.sessions.stream_token(SID)
    assert issued.token == "tkst1.x.y" and issued.expires_at.year == 2025
    assert (seen[0].method, seen[0].url.path) == ("POST", f"/v1/sessions/{SID}/stream-tokens")


def test_async_events_resume_the_same_way() -> None:
    handler, seen = resume_script()

    async def run() -> list[int]:
        async with AsyncClient(
            "http://api", "tok", backoff=0.001, transport=httpx.MockTransport(handler)
        ) as c:
            got = []
            async for e in c.sessions.events(SID, after=0):
                got.append(e.seq)
                if e.terminal:
                    break
            return got

    assert asyncio.run(run()) == [1, 2, 3, 4]
    assert [r.headers["last-event-id"] for r in seen] == ["0", "2", "2", "3"]


def test_a_stream_that_keeps_failing_gives_up_as_unreachable() -> None:
    handler, seen = script(*[httpx.ConnectError("refused")] * 4)
    transport = httpx.MockTransport(handler)
    with (
        Client("http://api", retries=3, backoff=0.001, transport=transport) as c,
        pytest.raises(Unreachable) as info,
    ):
        next(c.sessions.events(SID))
    assert info.value.code == "unreachable" and info.value.status is None
    assert len(seen) == 4


def test_cursor_before_the_retention_cut_raises_resync_required() -> None:
    handler, _ = script(problem(410, "resync_required", requested=1, earliest=50, latest=90))
    with (
        Client("http://api", transport=httpx.MockTransport(handler)) as c,
        pytest.raises(ResyncRequired) as info,
    ):
        next(c.sessions.events(SID, after=1))
    assert (info.value.status, info.value.earliest, info.value.latest) == (410, 50, 90)
    # and in the stream, once the prune passed a lagging reader
    handler, _ = script(
        stream(['event: stream.resync_required\ndata: {"requested": 3, "earliest": 9}\n\n'])
    )
    with (
        Client("http://api", transport=httpx.MockTransport(handler)) as c,
        pytest.raises(ResyncRequired) as info,
    ):
        next(c.sessions.events(SID, after=3))
    assert info.value.earliest == 9


def test_problems_are_typed_errors_with_code_and_status() -> None:
    handler, _ = script(problem(404, "not_found"), problem(409, "turn_not_active"))
    with Client("http://api", transport=httpx.MockTransport(handler)) as c:
        with pytest.raises(ApiError) as info:
            c.turns.get(SID, "t-1")
        assert (info.value.status, info.value.code) == (404, "not_found")
        with pytest.raises(ApiError) as info:
            c.turns.cancel(SID, "t-1")
        assert (info.value.status, info.value.code) == (409, "turn_not_active")
    handler, _ = script(httpx.ConnectError("refused"))
    with (
        Client("http://api", transport=httpx.MockTransport(handler)) as c,
        pytest.raises(Unreachable),
    ):
        c.turns.get(SID, "t-1")


def test_admit_sends_the_key_it_is_given_or_a_new_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TURNKEEP_URL", "http://from-env:1234/")
    monkeypatch.setenv("TURNKEEP_TOKEN", "env-token")
    handler, seen = script(
        httpx.Response(202, json=turn_json("queued")), httpx.Response(200, json=turn_json())
    )
    with Client(transport=httpx.MockTransport(handler)) as c:
        turn = c.turns.admit(SID, "demo", "hi", budget={"max_tool_calls": 2})
        c.turns.admit(SID, "demo", [{"role": "user", "content": "hi"}], idempotency_key="k-1")
    assert turn.state == "queued" and not turn.terminal
    first, second = seen
    assert str(first.url) == "http://from-env:1234/v1/sessions/s-1/turns"
    assert first.headers["authorization"] == "Bearer env-token"
    assert (
        len(first.headers["idempotency-key"]) == 32 and second.headers["idempotency-key"] == "k-1"
    )
    assert json.loads(first.content) == {
        "agent": "demo",
        "input": [{"role": "user", "content": "hi"}],
        "budget": {"max_tool_calls": 2},
    }


def test_wait_long_polls_until_terminal_or_waiting_for_someone() -> None:
    pending = {"request_id": "approval-2-1", "kind": "approval", "tool": {"name": "transfer"}}
    answered = {**pending, "resolved": True}
    handler, seen = script(
        httpx.Response(200, json=turn_json("running")),
        # answered, not yet picked up by a worker: it waits for no one, the poll goes on
        httpx.Response(200, json=turn_json("waiting", pending_input=answered)),
        httpx.Response(200, json=turn_json("completed", result={"text": "ok"})),
        httpx.Response(200, json=turn_json("waiting", pending_input=pending)),
    )
    with Client("http://api", poll=2.0, transport=httpx.MockTransport(handler)) as c:
        turn = c.turns.wait(SID, "t-1", timeout=30)
        assert turn.state == "completed" and turn.result == {"text": "ok"}
        parked = c.turns.wait(SID, "t-2", timeout=30)
    assert parked.awaiting_input and parked.pending_input is not None
    assert [r.url.params["wait"] for r in seen] == ["2.000"] * 4


def test_sse_parser_framing() -> None:
    p = SSEParser()
    lines = ["id: 7", "event: x", "data: a", "data: b", "", ": comment", "", "data:c", ""]
    frames = [f for f in map(p.feed, lines) if f is not None]
    assert [(f.id, f.event, f.data, f.comment) for f in frames] == [
        ("7", "x", ["a", "b"], False),
        (None, "message", [], True),
        (None, "message", ["c"], False),
    ]


# -- agents and their versions -----------------------------------------------------------

H1, H2, H0 = "a1" * 32, "b2" * 32, "c3" * 32
AGENTS = {
    "agents": [
        {
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
        }
    ]
}
VERSIONS = {
    "name": "support",
    "versions": [
        {
            "definition_hash": H0,
            "version": None,
            "declared": False,
            "latest": False,
            "default": False,
            "turns": {"waiting": 1, "running": 2},
            "workers": [],
        },
        {
            "definition_hash": H2,
            "version": "2",
            "declared": True,
            "latest": True,
            "default": False,
            "turns": {},
            "workers": [{"worker": "celery@w-2", "host": "w-2", "seen_at": 1767225600.5}],
        },
    ],
}


def test_agents_and_versions_are_typed() -> None:
    handler, seen = script(httpx.Response(200, json=AGENTS), httpx.Response(200, json=VERSIONS))
    with Client("http://api", "tok", transport=httpx.MockTransport(handler)) as c:
        listed = c.agents.list()
        found = c.agents.versions("support")
    (agent,) = listed.agents
    assert (agent.name, agent.latest.version, agent.latest.definition_hash) == ("support", "2", H2)
    assert (agent.gated, agent.default.version, agent.default.definition_hash) == (True, "1", H1)
    assert [(v.version, v.latest, v.default, v.on_deploy) for v in agent.versions] == [
        ("1", False, True, "pinned"),
        ("2", True, False, "upgrade"),
    ]
    old, new = found.versions
    assert (old.version, old.declared, old.latest, old.active) == (None, False, False, 3)
    assert old.turns == {"waiting": 1, "running": 2} and old.workers == []
    assert (new.active, new.workers[0].worker, new.workers[0].seen_at) == (
        0,
        "celery@w-2",
        1767225600.5,
    )
    assert [(r.method, r.url.path) for r in seen] == [
        ("GET", "/v1/agents"),
        ("GET", "/v1/agents/support/versions"),
    ]


def test_upgrades_post_to_the_turn_and_to_the_definition() -> None:
    handler, seen = script(
        httpx.Response(202, json={"turn_id": "t-1", "upgrade_requested": True}),
        httpx.Response(202, json={"requested": 3}),
        problem(409, "turn_not_active"),
        problem(403, "forbidden_role"),
    )
    with Client("http://api", "tok", transport=httpx.MockTransport(handler)) as c:
        moved = c.turns.upgrade(SID, "t-1")
        flagged = c.agents.upgrade("support", H1)
        with pytest.raises(ApiError) as ended:
            c.turns.upgrade(SID, "t-2")
        with pytest.raises(ApiError) as member:
            c.agents.upgrade("support", H1)
    assert (moved.turn_id, moved.upgrade_requested, flagged.requested) == ("t-1", True, 3)
    assert (ended.value.status, ended.value.code) == (409, "turn_not_active")
    assert (member.value.status, member.value.code) == (403, "forbidden_role")
    assert [(r.method, r.url.path) for r in seen[:2]] == [
        ("POST", f"/v1/sessions/{SID}/turns/t-1/upgrade"),
        ("POST", f"/v1/agents/support/versions/{H1}/upgrade"),
    ]
    assert all(r.content == b"" for r in seen)


def test_admission_names_a_version_only_when_given_and_the_turn_says_which_it_runs() -> None:
    held = {"reason": "definition_unavailable", "definition_hash": H1}
    handler, seen = script(
        httpx.Response(202, json=turn_json("queued", agent_version="1", held=held)),
        httpx.Response(202, json=turn_json("queued", agent_version="2")),
        problem(422, "unknown_agent"),
    )
    with Client("http://api", transport=httpx.MockTransport(handler)) as c:
        pinned = c.turns.admit(SID, "support", "hi", agent_version="1")
        latest = c.turns.admit(SID, "support", "hi")
        with pytest.raises(ApiError) as unknown:
            c.turns.admit(SID, "support", "hi", agent_version="9")
    assert [json.loads(r.content).get("agent_version") for r in seen] == ["1", None, "9"]
    assert "agent_version" not in json.loads(seen[1].content)
    assert pinned.agent_version == "1" and pinned.held is not None
    assert (pinned.held.reason, pinned.held.definition_hash) == ("definition_unavailable", H1)
    assert (latest.agent_version, latest.held) == ("2", None)
    assert (unknown.value.status, unknown.value.code) == (422, "unknown_agent")
    # a turn of an older server has neither field
    assert Turn.model_validate(turn_json()).agent_version is None


def test_the_async_client_has_the_same_version_methods() -> None:
    handler, seen = script(
        httpx.Response(200, json=AGENTS),
        httpx.Response(200, json=VERSIONS),
        httpx.Response(202, json={"turn_id": "t-1", "upgrade_requested": True}),
        httpx.Response(202, json={"requested": 0}),
        httpx.Response(202, json=turn_json("queued", agent_version="1")),
    )

    async def run() -> tuple[Any, ...]:
        async with AsyncClient("http://api", transport=httpx.MockTransport(handler)) as c:
            return (
                await c.agents.list(),
                await c.agents.versions("support"),
                await c.turns.upgrade(SID, "t-1"),
                await c.agents.upgrade("support", H2),
                await c.turns.admit(SID, "support", "hi", agent_version="1"),
            )

    listed, found, moved, flagged, turn = asyncio.run(run())
    assert listed.agents[0].latest.version == "2"
    assert [v.definition_hash for v in found.versions] == [H0, H2]
    assert moved.upgrade_requested and flagged.requested == 0
    assert turn.agent_version == "1" and json.loads(seen[-1].content)["agent_version"] == "1"
    assert [r.url.path for r in seen[2:4]] == [
        f"/v1/sessions/{SID}/turns/t-1/upgrade",
        f"/v1/agents/support/versions/{H2}/upgrade",
    ]
