"""What the journal never holds (docs/erasure.md): an Anthropic turn with extended
thinking, run by a real worker against a local server speaking Anthropic's Messages
wire (tests/integration/test_providers.py), hands its thinking blocks back to
Anthropic, signature intact, on the next request of the turn and of the session's
next turn, while the journal (the events table, the JSON pages and SSE, /messages,
the timeline, a fork) holds none of them: they live in ``provider_state``, which the
session's erasure empties. Migration 0017 moves the blocks journals already hold."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from tests.conftest import PG_ADMIN, _sqlalchemy_url
from tests.integration.api_server import Api, admit, parse_sse, serve_api
from tests.integration.test_provider_wire import (
    ANTHROPIC_THINKING,
    REDACTED,
    REDACTED_BLOCK,
    SIGNATURE,
    THINKING_BLOCK,
)
from tests.integration.test_providers import ANTHROPIC_TEXT, KEY, FakeAPI, serve, sse
from tests.procs import Procs, wait_for
from turnkeep.store.facade import Store
from turnkeep.store.migrate import upgrade

pytestmark = pytest.mark.timeout(180)

#: the thinker's model (tests/agents.py); the local server answers it
MODEL = "claude-sonnet-4-5"
#: what of the thinking no reader may ever see
TRACES = (SIGNATURE, REDACTED, "signature", "redacted_thinking", "should call get_weather")


@pytest.fixture(scope="module")
def anthropic() -> Iterator[FakeAPI]:
    with serve() as fake:
        yield fake


@pytest.fixture(scope="module")
def api(service_env: dict[str, str]) -> Iterator[Api]:
    with serve_api(
        service_env, agents="tests.agents", broker_url=service_env["TURNKEEP_REDIS_URL"]
    ) as handle:
        yield handle


def _pg(url: str) -> str:
    return url.replace("postgresql+psycopg://", "postgresql://", 1)


def _rows(database_url: str, sql: str, *args: object) -> list[tuple[Any, ...]]:
    with psycopg.connect(_pg(database_url)) as conn:
        return list(conn.execute(sql, args).fetchall())


def _clean(text: str) -> None:
    for trace in TRACES:
        assert trace not in text, trace


def _ended(store: Store, tenant: str, sid: str, tid: str) -> Any:
    return wait_for(
        lambda: (t := store.reads.get_turn(tenant, sid, tid)).state.terminal and t, 60, what=tid
    )


def test_thinking_goes_back_to_anthropic_and_never_into_the_journal(
    api: Api, procs: Procs, store: Store, anthropic: FakeAPI, database_url: str
) -> None:
    with anthropic.lock:  # the worker asks for the thinker's model by its fixed name
        anthropic.scripts[MODEL] = [
            sse(ANTHROPIC_THINKING, piece=13),
            sse(ANTHROPIC_TEXT),
            sse(ANTHROPIC_TEXT),
        ]
        anthropic.seen[MODEL], anthropic.sent[MODEL] = [], 0
    procs.worker({"TURNKEEP_ANTHROPIC_BASE_URL": anthropic.base, "TURNKEEP_ANTHROPIC_API_KEY": KEY})
    tenant, c = api.tenant_a, api.client()
    sid = f"s-think-{uuid.uuid4().hex[:8]}"
    assert admit(c, sid, "t1", text="Weather in Paris?", agent="thinker").status_code == 202
    first = _ended(store, tenant, sid, "t1")
    assert first.state.value == "completed", first.error

    # the turn's second request carries the blocks as they came, before its tool call
    seen = anthropic.seen[MODEL]
    assert len(seen) == 2
    assistant = seen[1].body["messages"][1]
    assert assistant["role"] == "assistant"
    assert assistant["content"][:2] == [THINKING_BLOCK, REDACTED_BLOCK]
    assert assistant["content"][0]["signature"].encode() == SIGNATURE.encode()
    assert [b["type"] for b in assistant["content"][2:]] == ["text", "tool_use"]

    # the journal holds none of it: the events table, read as the owner, ...
    stored = _rows(
        database_url,
        "SELECT type, data::text FROM events WHERE tenant_id = %s AND session_id = %s ORDER BY seq",
        tenant,
        sid,
    )
    for _, data in stored:
        _clean(data)
    calls = [json.loads(d) for t, d in stored if t == "model.completed"]
    assert [d.get("provider_state") for d in calls] == ["anthropic", None]
    # ... while provider_state keeps it, beside the first call's event
    kept = _rows(
        database_url,
        "SELECT p.provider, p.data, e.type FROM provider_state p JOIN events e"
        " USING (tenant_id, session_id, seq) WHERE p.tenant_id = %s AND p.session_id = %s",
        tenant,
        sid,
    )
    assert len(kept) == 1 and kept[0][0] == "anthropic" and kept[0][2] == "model.completed"
    assert kept[0][1]["blocks"] == [THINKING_BLOCK, REDACTED_BLOCK]
    # ... nor does what a reader gets: pages, the stream, the transcript, the timeline
    base = f"/v1/sessions/{sid}"
    page = c.get(f"{base}/events", headers={"Accept": "application/json"})
    assert page.status_code == 200 and len(page.json()["events"]) == len(stored)
    _clean(page.text)
    with c.stream("GET", f"{base}/events", headers={"Accept": "text/event-stream"}) as r:
        frames = []
        for frame in parse_sse(r.iter_lines()):
            if frame is not None:
                frames.append(frame)
                if frame.event == "turn.completed":
                    break
    _clean(json.dumps([f.data for f in frames]))
    for read in (f"{base}/messages", f"{base}/turns/t1/timeline", f"{base}/turns/t1"):
        answer = c.get(read)
        assert answer.status_code == 200, answer.text
        _clean(answer.text)
    # ... nor a fork of it, which copies the journal and not the state
    fork_id = f"{sid}-fork"
    head = store.reads.get_session(tenant, sid).head_seq
    forked = c.post(f"{base}/fork", json={"at_seq": head, "session_id": fork_id})
    assert forked.status_code == 201, forked.text
    for _, data in _rows(
        database_url,
        "SELECT type, data::text FROM events WHERE tenant_id = %s AND session_id = %s",
        tenant,
        fork_id,
    ):
        _clean(data)
    assert not _rows(database_url, "SELECT 1 FROM provider_state WHERE session_id = %s", fork_id)

    # the session's next turn reads the state back for its first request
    assert admit(c, sid, "t2", text="And tomorrow?", agent="thinker").status_code == 202
    assert _ended(store, tenant, sid, "t2").state.value == "completed"
    third = anthropic.seen[MODEL][2].body["messages"]
    earlier = next(m for m in third if m["role"] == "assistant")
    assert earlier["content"][:2] == [THINKING_BLOCK, REDACTED_BLOCK]

    # erased with the session
    assert c.delete(base).status_code == 202
    wait_for(
        lambda: c.delete(base).status_code == 200, 60, interval=0.3, what="the erasure finished"
    )
    assert not _rows(
        database_url,
        "SELECT 1 FROM provider_state WHERE tenant_id = %s AND session_id = %s",
        tenant,
        sid,
    )


def test_migration_0017_moves_the_thinking_journals_hold_out_of_them() -> None:
    """A journal written before 0017 held the envelope in its model.completed event:
    the upgrade moves it to provider_state (the event keeps the provider's name), the
    downgrade puts it back."""
    name = f"turnkeep_mig_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    url = _sqlalchemy_url(name)
    envelope = {"v": 1, "provider": "anthropic", "blocks": [THINKING_BLOCK], "sha256": "x"}
    message = {"role": "assistant", "content": "Checking.", "provider_meta": envelope}
    try:
        upgrade(url, "0016")
        with psycopg.connect(_pg(url), autocommit=True) as conn:
            conn.execute("SELECT set_config('turnkeep.tenant', '*', false)")
            conn.execute(
                "INSERT INTO sessions (tenant_id, session_id, agent_name, head_seq)"
                " VALUES ('t', 's', 'thinker', 2)"
            )
            for seq, data in ((1, {"message": message}), (2, {"message": {"role": "assistant"}})):
                conn.execute(
                    "INSERT INTO events (tenant_id, session_id, seq, turn_id, type, step, data)"
                    " VALUES ('t', 's', %s, 'u', 'model.completed', %s, %s)",
                    (seq, seq, json.dumps(data)),
                )
        upgrade(url)
        with psycopg.connect(_pg(url)) as conn:
            conn.execute("SELECT set_config('turnkeep.tenant', '*', false)")
            events = conn.execute("SELECT seq, data FROM events ORDER BY seq").fetchall()
            kept = conn.execute("SELECT seq, provider, data FROM provider_state").fetchall()
        assert events == [
            (
                1,
                {
                    "message": {"role": "assistant", "content": "Checking."},
                    "provider_state": "anthropic",
                },
            ),
            (2, {"message": {"role": "assistant"}}),
        ]
        assert kept == [(1, "anthropic", envelope)]
        from alembic import command

        from turnkeep.store.migrate import alembic_config

        command.downgrade(alembic_config(url), "0016")
        with psycopg.connect(_pg(url)) as conn:
            conn.execute("SELECT set_config('turnkeep.tenant', '*', false)")
            back = conn.execute("SELECT data FROM events WHERE seq = 1").fetchone()
        assert back == ({"message": message},)
    finally:
        with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
