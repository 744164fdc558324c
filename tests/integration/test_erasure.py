"""Erasure against the real API, store and worker processes (docs/erasure.md).

``DELETE /v1/sessions/{sid}`` of a session with a running turn, an attachment, memory
facts, a pending webhook, feedback, provider state and 20,000 events: from the answer
on every read is 410 ``session_deleted`` (another tenant's still 404), the worker's
late write is refused, an open event stream ends with ``stream.session_deleted``, and
once ``erased_at`` is set no row of the session is left in any table (read as the
owner), but its tombstone. A session past its TTL is erased by beat's sweep; an
admission moves the TTL and never revives a gone session.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import psycopg
import pytest

from tests.agents import AGENTS
from tests.integration.api_server import Api, SseFrame, admit, parse_sse, serve_api
from tests.journals import long_journal
from tests.procs import Procs, wait_for
from turnkeep.store.erasure import Reason
from turnkeep.store.erasure_registry import Part
from turnkeep.store.errors import SessionDeleted
from turnkeep.store.facade import Store
from turnkeep.store.new_turn import Bounds, NewTurn

pytestmark = pytest.mark.timeout(240)

SECRET = "erasure-test-webhook-secret"
KEEPER = next(a for a in AGENTS if a.name == "keeper")
#: 5,000 completed turns of four events each
OLD_TURNS = 5000


@pytest.fixture(scope="module")
def api(service_env: dict[str, str]) -> Iterator[Api]:
    # the worker processes' broker and agents, so the API's enqueues reach them
    with serve_api(
        service_env,
        agents="tests.agents",
        broker_url=service_env["TURNKEEP_REDIS_URL"],
        webhook_secret=SECRET,
    ) as handle:
        yield handle


def _pg(url: str) -> str:
    return url.replace("postgresql+psycopg://", "postgresql://", 1)


def session_rows(database_url: str, tenant: str, sid: str) -> dict[str, int]:
    """Rows of the session in every table that has a ``tenant_id`` and a
    ``session_id`` column (found in the catalogue, so a table added later is
    covered), read as the owner, whom row-level security does not bind."""
    with psycopg.connect(_pg(database_url)) as conn:
        tables = [
            name
            for (name,) in conn.execute(
                "SELECT table_name FROM information_schema.columns"
                " WHERE table_schema = 'public' AND column_name IN ('tenant_id', 'session_id')"
                " GROUP BY table_name HAVING count(*) = 2 ORDER BY table_name"
            )
        ]
        assert {"sessions", "turns", "events", "provider_state", "session_tombstones"} <= set(
            tables
        )
        counts = {}
        for table in tables:
            row = conn.execute(
                f"SELECT count(*) FROM {table} WHERE tenant_id = %s AND session_id = %s",
                (tenant, sid),
            ).fetchone()
            assert row is not None
            counts[table] = int(row[0])
    return counts


def tenant_text(database_url: str, tenant: str) -> str:
    """Every row of the tenant in every table with a ``tenant_id``, as text."""
    with psycopg.connect(_pg(database_url)) as conn:
        tables = [
            name
            for (name,) in conn.execute(
                "SELECT table_name FROM information_schema.columns"
                " WHERE table_schema = 'public' AND column_name = 'tenant_id'"
            )
        ]
        return "\n".join(
            row
            for table in tables
            for (row,) in conn.execute(
                f"SELECT r::text FROM {table} r WHERE tenant_id = %s", (tenant,)
            )
        )


def _seed(database_url: str, tenant: str, sid: str) -> None:
    """20,000 events of 5,000 old turns (the session as the keeper's), a recorded tool
    step and a model call's provider state among them."""
    long_journal(
        database_url, tenant, sid, OLD_TURNS, agent="keeper", agent_hash=KEEPER.definition_hash
    )
    with psycopg.connect(_pg(database_url), autocommit=True) as conn:
        conn.execute(
            "INSERT INTO tool_steps (tenant_id, session_id, turn_id, step, name, result)"
            " VALUES (%s, %s, 'old-7', 2, 'charge', '{\"secret\": \"step-mark\"}')",
            (tenant, sid),
        )
        conn.execute(
            "INSERT INTO provider_state (tenant_id, session_id, seq, provider, data)"
            " VALUES (%s, %s, 3, 'anthropic', '{\"blocks\": [\"thinking-mark\"]}')",
            (tenant, sid),
        )
        # as autovacuum would have by the time a session holds this much: with the
        # statistics of an empty table, the foreign keys' check of each deleted turn
        # (feedback's, webhooks') walks the session's turns instead of a primary key
        conn.execute("ANALYZE turns, events")


def _stream(c: httpx.Client, sid: str, after: int, frames: list[SseFrame]) -> None:
    """Follow the session's stream from ``after`` until it ends."""
    headers = {"Accept": "text/event-stream", "Last-Event-ID": str(after)}
    with c.stream("GET", f"/v1/sessions/{sid}/events", headers=headers, timeout=60) as r:
        assert r.status_code == 200
        for frame in parse_sse(r.iter_lines()):
            if frame is not None:
                frames.append(frame)
                if frame.event.startswith("stream."):
                    return


def _gone(r: httpx.Response) -> dict[str, Any]:
    assert r.status_code == 410, (r.request.method, r.request.url, r.status_code, r.text)
    body: dict[str, Any] = r.json()
    assert body["code"] == "session_deleted"
    return body


def test_delete_erases_everything_the_session_held(
    api: Api, procs: Procs, store: Store, database_url: str
) -> None:
    tenant, c, other = api.tenant_a, api.client(), api.client("b")
    sid = f"s-erase-{uuid.uuid4().hex[:8]}"
    _seed(database_url, tenant, sid)
    worker = procs.worker({"TURNKEEP_TEST_TOOL_SLEEP": "4"})
    head = store.reads.get_session(tenant, sid).head_seq
    assert head == 4 * OLD_TURNS

    # a memory fact, feedback, an attachment, then a running turn with a pending webhook
    assert admit(c, sid, "t-mem", text="please remember", agent="keeper").status_code == 202
    wait_for(
        lambda: store.reads.get_turn(tenant, sid, "t-mem").state.terminal, 60, what="t-mem ended"
    )
    assert c.post(f"/v1/sessions/{sid}/turns/t-mem/feedback", json={"thumbs": "up"}).is_success
    upload = c.post(
        f"/v1/sessions/{sid}/attachments",
        json={"filename": "erase-me.txt", "content_type": "text/plain", "data_base64": "aGk="},
    )
    assert upload.status_code == 201, upload.text
    running = admit(
        c, sid, "t-run", text=f"steps=2 {sid}-mark", agent="keeper", callback_url="http://h/x"
    )
    assert running.status_code == 202, running.text
    key = f"{tenant}/{sid}/t-run/2"
    wait_for(lambda: _tool_started(database_url, key), 60, what="t-run inside its tool call")
    before = session_rows(database_url, tenant, sid)
    assert before["events"] > 20_000 and before["turns"] == OLD_TURNS + 2
    assert all(
        before[t] >= 1
        for t in ("memories", "feedback", "attachments", "webhooks", "tool_steps", "provider_state")
    ), before

    # an open stream, following the session from its head
    frames: list[SseFrame] = []
    follower = threading.Thread(target=_stream, args=(api.client(), sid, head, frames))
    follower.start()
    wait_for(lambda: frames, 30, what="the stream's first frame")

    assert other.delete(f"/v1/sessions/{sid}").status_code == 404
    r = c.delete(f"/v1/sessions/{sid}")
    assert r.status_code == 202, r.text
    gone = r.json()
    assert (gone["session_id"], gone["reason"], gone["deleted_by"]) == (sid, "deleted", "alice")
    assert gone["erased_at"] is None

    # 410 everywhere from the answer on; another tenant still 404
    base = f"/v1/sessions/{sid}"
    for read in (
        base,
        f"{base}/turns",
        f"{base}/turns/t-mem",
        f"{base}/turns/t-mem/timeline",
        f"{base}/turns/t-mem?wait=1",
        f"{base}/messages",
        f"{base}/attachments/{upload.json()['attachment_id']}",
    ):
        body = _gone(c.get(read))
        assert body["deleted_at"] == gone["deleted_at"]
    _gone(c.get(f"{base}/events", headers={"Accept": "application/json"}))
    _gone(c.get(f"{base}/events", headers={"Accept": "text/event-stream"}))
    _gone(c.post(f"{base}/turns/t-run/cancel"))
    _gone(c.post(f"{base}/fork", json={"at_seq": 1}))
    _gone(c.post(f"{base}/turns/t-mem/feedback", json={"thumbs": "down"}))
    _gone(admit(c, sid, "t-new", agent="keeper"))
    _gone(admit(c, sid, "t-mem", text="please remember", agent="keeper"))  # a replay
    assert other.get(base).status_code == 404
    assert other.get(f"{base}/turns/t-mem").status_code == 404
    assert other.get(f"{base}/events", headers={"Accept": "application/json"}).status_code == 404
    assert sid not in {s["session_id"] for s in c.get("/v1/sessions").json()["sessions"]}
    follower.join(30)
    assert frames[-1].event == "stream.session_deleted", frames[-1]
    assert frames[-1].data["deleted_at"] == gone["deleted_at"]

    # erased: DELETE again answers the same tombstone, erased
    def erased() -> dict[str, Any] | None:
        again = c.delete(base)
        assert again.status_code in (200, 202), again.text
        return again.json() if again.status_code == 200 else None

    done = wait_for(erased, 90, interval=0.3, what="the erasure finished")
    assert isinstance(done, dict) and done["deleted_at"] == gone["deleted_at"]
    assert done["erased_at"] is not None
    assert done["erased_rows"] >= sum(before.values())

    # the running turn's worker came back from its tool and was refused
    wait_for(lambda: "'lease_lost'" in worker.text(), 60, what="the stale write refused")
    assert _tool_effect(database_url, key), "the tool ran to its end"
    # nothing of it, in any table, but its tombstone
    after = session_rows(database_url, tenant, sid)
    assert after == {**dict.fromkeys(after, 0), "session_tombstones": 1}, after
    text = tenant_text(database_url, tenant)
    for mark in (f"{sid}-mark", "keeper fact 7", "erase-me.txt", "step-mark", "thinking-mark"):
        assert mark not in text, mark
    assert sid in text  # the tombstone's id
    _gone(c.get(base))
    assert other.get(base).status_code == 404


def _tool_started(database_url: str, key: str) -> bool:
    with psycopg.connect(_pg(database_url)) as conn:
        row = conn.execute("SELECT count(*) FROM test_tool_calls WHERE key = %s", (key,))
        found = row.fetchone()
    return found is not None and found[0] > 0


def _tool_effect(database_url: str, key: str) -> bool:
    with psycopg.connect(_pg(database_url)) as conn:
        row = conn.execute("SELECT count(*) FROM test_tool_effects WHERE key = %s", (key,))
        found = row.fetchone()
    return found is not None and found[0] > 0


# -- the session's TTL --------------------------------------------------------------


def test_the_sweep_erases_a_session_past_its_ttl(
    api: Api, procs: Procs, store: Store, database_url: str
) -> None:
    tenant, c = api.tenant_a, api.client()
    sid = f"s-ttl-{uuid.uuid4().hex[:8]}"
    fast = {"TURNKEEP_ERASURE_INTERVAL": "0.5"}
    procs.worker(fast)
    r = admit(c, sid, "t1", text="steps=1", agent="keeper", expires_after=3)
    assert r.status_code == 202, r.text
    wait_for(lambda: store.reads.get_turn(tenant, sid, "t1").state.terminal, 60, what="t1 ended")
    seen = c.get(f"/v1/sessions/{sid}").json()
    assert seen["expires_after"] == 3 and seen["expires_at"] is not None
    procs.beat(fast)

    def swept() -> bool:
        gone = store.reads.get_tombstone(tenant, sid)
        return gone is not None and gone.erased

    wait_for(swept, 60, interval=0.3, what="the sweep erased the expired session")
    tombstone = store.reads.get_tombstone(tenant, sid)
    assert tombstone is not None
    assert (tombstone.reason, tombstone.deleted_by) == (Reason.EXPIRED.value, None)
    body = _gone(c.get(f"/v1/sessions/{sid}"))
    assert body["erased_at"] is not None
    _gone(admit(c, sid, "t1", text="steps=1", agent="keeper"))
    rows = session_rows(database_url, tenant, sid)
    assert rows == {**dict.fromkeys(rows, 0), "session_tombstones": 1}, rows


def test_an_admission_moves_the_ttl_and_a_gone_session_admits_nothing(
    store: Store, tenant: str, sid: str
) -> None:
    """Each admission sets expires_at to now + TTL: the turn's expires_after, kept for
    the session, else the tenant's default; past it the session admits nothing (a
    replay neither), before any sweep came."""

    def turn(tid: str, **kw: Any) -> None:
        new = NewTurn(
            tenant_id=tenant,
            session_id=sid,
            turn_id=tid,
            agent_name="keeper",
            agent_hash=KEEPER.definition_hash,
            input_hash=tid,
            input={"messages": []},
            expires_after=kw.get("expires_after"),
        )
        store.turns.admit(new, Bounds(default_ttl=kw.get("default_ttl")))

    turn("t1", default_ttl=3600.0)
    first = store.reads.get_session(tenant, sid)
    assert first.expires_after is None and first.expires_at is not None
    assert 3500 < (first.expires_at - first.created_at).total_seconds() <= 3601
    turn("t2", expires_after=2, default_ttl=3600.0)
    second = store.reads.get_session(tenant, sid)
    assert second.expires_after == 2 and second.expires_at is not None
    assert second.expires_at < first.expires_at
    turn("t3", default_ttl=3600.0)  # names none: the session's own 2 s
    third = store.reads.get_session(tenant, sid)
    assert third.expires_after == 2 and third.expires_at is not None
    assert third.expires_at > second.expires_at  # moved by t3's admission
    wait_for(lambda: store.reads.gone(tenant, sid) is not None, 10, what="its TTL passed")
    for tid in ("t4", "t3"):  # a new turn, a replay
        with pytest.raises(SessionDeleted):
            turn(tid)
    assert store.erasure.expired_sessions(limit=1000).count((tenant, sid)) == 1
    # the sweep's task writes the tombstone under the session's lock, then erases
    done = store.erasure.tombstone(
        tenant, sid, reason=Reason.EXPIRED, deleted_by=None, expired_only=True
    )
    assert done.created and done.tombstone.reason == "expired"
    for part in Part:
        store.erasure.erase_rows(tenant, sid, part, batch=100)
    erased = wait_for(
        lambda: (t := store.erasure.finish_erasure(tenant, sid)) is not None and t.erased and t,
        10,
        what="the session row deleted",
    )
    assert erased
    with pytest.raises(SessionDeleted):
        turn("t5")
