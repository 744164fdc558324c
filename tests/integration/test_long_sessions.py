"""Long-lived sessions: a turn reads a window, not the journal; a compaction is the
base of every later turn, checked at the wire of a local OpenAI-compatible server;
a history too large for one summary request is summarised in chunks."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from tests.integration.api_server import ServerThread
from tests.journals import append_compaction, explain_rows, long_journal
from turnkeep.runtime import window
from turnkeep.runtime.agents.registry import load_agents
from turnkeep.runtime.plan import SUMMARY_PREFIX
from turnkeep.runtime.states import TurnState
from turnkeep.store.context_cache import NO_WINDOW
from turnkeep.store.new_turn import NewTurn
from turnkeep.store.sql import q


class ChatServer:
    """Speaks the Chat Completions streaming wire format; answers summary requests
    with a numbered summary and anything else with the newest user message's tag;
    records every request body."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.bodies: list[dict[str, Any]] = []
        self.summaries = 0

    async def handle(self, request: Request) -> Response:
        body = await request.json()
        with self.lock:
            self.bodies.append(body)
            first = next(m for m in body["messages"] if m["role"] != "system")
            if first["content"].startswith(window.SUMMARY_PROMPT):
                self.summaries += 1
                text = f"summary-{self.summaries}"
            else:
                last = [m["content"] for m in body["messages"] if m["role"] == "user"][-1]
                text = "answer to " + last.split(":")[0]

        def chunk(delta: dict[str, Any], finish: str | None, usage: Any = None) -> bytes:
            event = {
                "id": "chatcmpl-1",
                "object": "chat.completion.chunk",
                "created": 1,
                "model": body["model"],
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
                "usage": usage,
            }
            return b"data: " + json.dumps(event).encode() + b"\n\n"

        async def stream() -> Any:
            yield chunk({"role": "assistant", "content": text}, None)
            yield chunk({}, "stop")
            usage = {"prompt_tokens": 50, "completion_tokens": 5, "total_tokens": 55}
            yield b'data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,' + (
                b'"model":"wire-chat-model","choices":[],"usage":'
                + json.dumps(usage).encode()
                + b"}\n\n"
            )
            yield b"data: [DONE]\n\n"

        return StreamingResponse(stream(), media_type="text/event-stream")


@pytest.fixture
def chat() -> Iterator[tuple[ChatServer, str]]:
    server = ChatServer()
    app = Starlette(routes=[Route("/v1/chat/completions", server.handle, methods=["POST"])])
    thread = ServerThread(app)
    thread.start()
    try:
        yield server, f"{thread.url}/v1"
    finally:
        thread.stop()


def _user_messages(body: dict[str, Any]) -> list[str]:
    return [m["content"] for m in body["messages"] if m["role"] == "user"]


def test_a_compaction_is_the_base_of_the_next_turn_at_the_wire(
    chat, procs, client, store, tenant, sid
):
    server, url = chat
    procs.worker({"TURNKEEP_OPENAI_BASE_URL": url, "TURNKEEP_OPENAI_API_KEY": "sk-local"})
    filler = " ".join(["lorem ipsum dolor"] * 30)
    tids = []
    for i in range(7):
        tid = client.admit(tenant, sid, "wire-chat", f"turn {i}: {filler}")
        turn = client.wait_terminal(tenant, sid, tid, timeout=30)
        assert turn.state is TurnState.COMPLETED, turn.error
        assert turn.result["text"] == f"answer to turn {i}"
        tids.append(tid)
    events, _ = store.reads.list_events(tenant, sid, after=0)
    compactions = [e for e in events if e.type == "context.compacted"]
    assert len(compactions) >= 2
    first = compactions[0]
    # budgeted before the call, summarised in chunks that each fit one request
    assert first.data["reason"] == "budget" and first.data["chunks"] >= 2
    assert first.data["prompt_hash"] == window.PROMPT_HASH
    assert first.data["from_seq"] == 1 and first.data["supersedes"] is None
    assert first.data["usage"]["input_tokens"] == 50 * first.data["chunks"]
    assert compactions[1].data["supersedes"] == first.seq
    assert compactions[1].data["from_seq"] == 1  # its source range includes the first's
    agent = load_agents("tests.agents").get("wire-chat")
    limit = agent.context_window - agent.reserve_output
    summary_bodies = [
        b for b in server.bodies if _user_messages(b)[0].startswith(window.SUMMARY_PROMPT)
    ]
    assert len(summary_bodies) >= first.data["chunks"]
    for body in summary_bodies:
        assert sum(window.estimate(m) for m in _user_messages(body)) <= limit
    # the turn after the first compaction: its request starts from that summary
    writer = first.turn_id
    nxt = tids[tids.index(writer) + 1]
    later = [e for e in events if e.turn_id == nxt and e.type == "model.completed"]
    assert later
    asked = [
        b
        for b in server.bodies
        if _user_messages(b)[-1].startswith(f"turn {tids.index(nxt)}:")
        and not _user_messages(b)[0].startswith(window.SUMMARY_PROMPT)
    ]
    users = _user_messages(asked[0])
    assert users[0] == SUMMARY_PREFIX + first.data["summary"]
    assert not any(u.startswith("turn 0:") for u in users)  # summarised, not replayed


def test_a_turn_in_a_long_session_reads_a_bounded_window(store, tenant, sid, database_url):
    agent_hash = load_agents("tests.agents").get("memory").definition_hash
    url = database_url.replace("postgresql+psycopg://", "postgresql://")
    head = long_journal(url, tenant, sid, 2500, agent="memory")  # 10,000 events
    compacted = f"{sid}-c"
    chead = long_journal(url, tenant, compacted, 2500, agent="memory")
    # a compaction 8 turns from the head, summarising everything before it
    append_compaction(url, tenant, compacted, to_seq=chead - 32)
    with psycopg.connect(url, autocommit=True) as conn:
        # statistics as autovacuum keeps them for a table that grew like this one
        conn.execute("ANALYZE events")
        conn.execute("ANALYZE turns")
    for session, expect_prior in ((sid, 100), (compacted, 8 * 2 + 1)):
        store.turns.admit(
            NewTurn(
                tenant_id=tenant,
                session_id=session,
                turn_id="new",
                agent_name="memory",
                agent_hash=agent_hash,
                input_hash="h",
                input={"messages": [{"role": "user", "content": "and now?"}]},
                output_schema=None,
                budget=None,
            )
        )
        params = {
            "tenant_id": tenant,
            "session_id": session,
            "fence": 2,
            "claim": True,
            "agent_hashes": [agent_hash],
            "max_attempts": 3,
            "window_rows": 100,
            "window_bytes": 1 << 20,
            **NO_WINDOW,  # no worker's window kept: the whole one is read
        }
        with psycopg.connect(url) as conn:
            rows = explain_rows(conn, q("start_turn"), params)
            conn.rollback()
        # the window and this turn's events, not the 10,000 before them
        assert rows <= 4 * expect_prior + 20, rows
        small = type(store)(store.db, window_rows=100, window_bytes=1 << 20)
        started = small.turns.start(
            tenant, session, 2, claim=True, agent_hashes=[agent_hash], max_attempts=3
        )
        assert started.turn is not None and started.turn.turn_id == "new"
        assert len(started.prior) == expect_prior, len(started.prior)
        if session == compacted:
            assert started.prior[0].type == "context.compacted"
    assert head == 10_000
