"""Redaction end to end (runtime/obs/redact.py): the real API and a real worker run the
``leaker`` agent of tests/agents.py, whose model streams a configured secret split
across deltas and an API key, and whose tool returns both and logs and prints them.
Neither reaches the database, the published channel, the SSE replay, nor the
worker's log."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator

import httpx
import psycopg
import pytest
import redis

from tests.agents import leak_key
from tests.integration.api_server import Api, parse_sse, serve_api
from turnkeep.runtime.obs.redact import MARKER
from turnkeep.store import channel
from turnkeep.store.keys import events_channel

#: words, so the demo model streams it in pieces; random, so a search finds only this run
WORDS = [uuid.uuid4().hex[:8] for _ in range(4)]
SECRET = "open sesame " + " ".join(WORDS)
KEY = leak_key(SECRET)
#: none of these may be found anywhere: the secret, the key, and any piece of either
NEEDLES = [SECRET, KEY, *WORDS, KEY[-32:]]


@pytest.fixture(scope="module")
def api(service_env: dict[str, str]) -> Iterator[Api]:
    with serve_api(
        service_env,
        agents="tests.agents",
        broker_url=service_env["TURNKEEP_REDIS_URL"],
        redact_values=json.dumps([SECRET]),
    ) as handle:
        yield handle


def _found(text: str) -> list[str]:
    return [n for n in NEEDLES if n in text]


def test_a_secret_never_reaches_the_database_the_channel_the_replay_or_the_log(
    api: Api, procs, sid: str, database_url: str, redis_url: str
) -> None:
    worker = procs.worker(
        {"TURNKEEP_REDACT_VALUES": json.dumps([SECRET]), "TURNKEEP_TEST_SECRET": SECRET}
    )
    live = redis.Redis.from_url(redis_url).pubsub()
    live.subscribe(events_channel(api.tenant_a, sid))
    c = api.client()
    r = c.post(
        f"/v1/sessions/{sid}/turns",
        json={"agent": "leaker", "input": [{"role": "user", "content": "go"}]},
    )
    assert r.status_code == 202, r.text
    tid = r.json()["turn_id"]
    for _ in range(6):  # long polls of up to 10 s each
        turn = c.get(f"/v1/sessions/{sid}/turns/{tid}?wait=10").json()
        if turn["state"] in ("completed", "failed", "cancelled"):
            break
    assert turn["state"] == "completed", turn
    assert MARKER in turn["result"]["text"] and not _found(json.dumps(turn))

    # the database, searched as text: every event and turn row of the run
    url = database_url.replace("postgresql+psycopg://", "postgresql://")
    with psycopg.connect(url) as conn:
        for needle in NEEDLES:
            for table in ("events", "turns"):
                n = conn.execute(
                    f"SELECT count(*) FROM {table} x WHERE strpos(x::text, %s) > 0", (needle,)
                ).fetchone()[0]
                assert n == 0, (table, needle)
        (tool_data,) = conn.execute(
            "SELECT data::text FROM events WHERE tenant_id = %s AND session_id = %s"
            " AND type = 'tool.completed'",
            (api.tenant_a, sid),
        ).fetchone()
    assert MARKER in tool_data  # redacted, not dropped

    # what was published live: committed events and the model's deltas
    messages = []  # all sent before the turn settled: waiting in the connection
    while (m := live.get_message(timeout=1.0)) is not None:
        if m["type"] == "message":
            messages.append(m["data"].decode())
    live.close()
    assert not _found("\n".join(messages))
    deltas = [d for m in messages for d in channel.decode(m) if d["kind"] == "delta"]
    first = [d["text"] for d in deltas if d["step"] == 1]
    assert len(first) >= 2  # the secret was split across publishes, too
    assert "".join(first) == f"{'lorem ' * 40}{MARKER} with {MARKER} "

    # the SSE replay of the whole journal
    frames = []
    with (
        httpx.Client(base_url=api.url, timeout=httpx.Timeout(10, read=10)) as sse,
        sse.stream(
            "GET",
            f"/v1/sessions/{sid}/events",
            headers={"Accept": "text/event-stream", "Authorization": f"Bearer {api.token_a}"},
        ) as resp,
    ):
        for frame in parse_sse(resp.iter_lines()):
            if frame is not None:
                frames.append(frame)
                if frame.event == "turn.completed":
                    break
    assert frames and frames[-1].event == "turn.completed"
    assert not _found(json.dumps([f.data for f in frames]))

    # the worker's log: the tool logged and printed both; only the marker is there
    worker.stop()
    log = worker.text()
    assert f"leaky tool saw {MARKER} (asked {MARKER})" in log, log
    assert f"leaky tool printed {MARKER}" in log, log
    assert not _found(log)


def test_an_answer_is_journalled_redacted_with_the_hash_of_what_was_answered(
    api: Api, procs, sid: str, database_url: str
) -> None:
    """An input answer is a committed value like any other (issue 27): the journal and
    the turn keep it redacted, and the hash of the answer as given, for audit."""
    from turnkeep.runtime.hashing import sha256_hex

    procs.worker({"TURNKEEP_REDACT_VALUES": json.dumps([SECRET])})
    c = api.client()
    r = c.post(
        f"/v1/sessions/{sid}/turns",
        json={"agent": "asker", "input": [{"role": "user", "content": "go"}]},
    )
    assert r.status_code == 202, r.text
    tid = r.json()["turn_id"]
    for _ in range(6):
        turn = c.get(f"/v1/sessions/{sid}/turns/{tid}?wait=10").json()
        if turn["state"] == "waiting":
            break
    pending = turn["pending_input"]
    assert pending is not None and pending["kind"] == "question", turn
    body = {"answer": f"my name is {SECRET}"}
    url = f"/v1/sessions/{sid}/turns/{tid}/inputs/{pending['request_id']}"
    assert c.post(url, json=body).status_code == 200
    with psycopg.connect(database_url.replace("postgresql+psycopg://", "postgresql://")) as conn:
        (data,) = conn.execute(
            "SELECT data FROM events WHERE tenant_id = %s AND session_id = %s"
            " AND type = 'input.resolved'",
            (api.tenant_a, sid),
        ).fetchone()
        (turn_row,) = conn.execute(
            "SELECT row_to_json(t)::text FROM turns t WHERE tenant_id = %s AND session_id = %s",
            (api.tenant_a, sid),
        ).fetchone()
    assert data["response"]["answer"] == f"my name is {MARKER}", data
    assert data["response_hash"] == sha256_hex(body)
    assert not _found(json.dumps(data)) and not _found(turn_row)
