"""Journal retention against the real store, API and processes: the prune keeps the
newest events, every active turn's and the context window's, in bounded statements;
a cursor before the cut is 410 ``resync_required``; one at or after it gets every later
event once; /messages pages through a long session; a slow SSE reader is cut off with
``stream.resume`` instead of buffered; beat runs the prune."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import httpx
import psycopg
import pytest
import redis

from tests.integration.api_server import Api, SseFrame, Stepper, admit, parse_sse, serve_api
from tests.invariants import check_all
from tests.journals import ASKED, PLAIN, append_compaction, long_journal
from tests.procs import wait_for
from turnkeep.store.channel import Publisher
from turnkeep.store.facade import Store

SSE = {"Accept": "text/event-stream"}
JSON = {"Accept": "application/json"}


def _pg(url: str) -> str:
    return url.replace("postgresql+psycopg://", "postgresql://", 1)


def set_state(database_url: str, tenant: str, sid: str, turn_id: str, state: str) -> None:
    with psycopg.connect(_pg(database_url), autocommit=True) as conn:
        conn.execute(
            "UPDATE turns SET state = %s WHERE tenant_id = %s AND session_id = %s AND turn_id = %s",
            (state, tenant, sid, turn_id),
        )


def seqs(database_url: str, tenant: str, sid: str) -> list[int]:
    with psycopg.connect(_pg(database_url)) as conn:
        rows = conn.execute(
            "SELECT seq FROM events WHERE tenant_id = %s AND session_id = %s ORDER BY seq",
            (tenant, sid),
        ).fetchall()
    return [r[0] for r in rows]


def counts(database_url: str, tenant: str, sid: str) -> tuple[int, int]:
    """(turn rows, turns with a result): never pruned."""
    with psycopg.connect(_pg(database_url)) as conn:
        row = conn.execute(
            "SELECT count(*), count(result) FROM turns WHERE tenant_id = %s AND session_id = %s",
            (tenant, sid),
        ).fetchone()
    assert row is not None
    return int(row[0]), int(row[1])


def no_violations(database_url: str, tenant: str) -> None:
    bad = check_all(database_url, tenants=[tenant], require_settled=False, effects_table=False)
    assert bad == [], bad


# -- the prune statement, against the real store -----------------------------------


def test_prune_keeps_the_newest_events_and_an_active_turns_in_bounded_batches(
    store: Store, database_url: str, tenant: str, sid: str
) -> None:
    long_journal(database_url, tenant, sid, 750)  # 3,000 events
    # the newest compaction covers it all (its window is itself), and a turn far back
    # is still waiting (an unanswered question): its events stay
    head = append_compaction(database_url, tenant, sid, to_seq=3000)
    set_state(database_url, tenant, sid, "old-250", "waiting")
    keep = {"retain": 1000, "batch": 400, "window_rows": 50}
    first = store.retention.prune(tenant, sid, **keep)
    assert (first.deleted, first.earliest_seq, first.head_seq) == (400, 401, head)
    assert store.reads.get_session(tenant, sid).earliest_seq == 401
    assert seqs(database_url, tenant, sid) == list(range(401, head + 1))
    # the next statements stop at the waiting turn's turn.accepted (seq 1001)
    assert store.retention.prune(tenant, sid, **keep).earliest_seq == 801
    held = store.retention.prune(tenant, sid, **keep)
    assert (held.deleted, held.earliest_seq) == (200, 1001)
    assert store.retention.prune(tenant, sid, **keep).deleted == 0
    # other tests' sessions (other tenants) may follow in key order: this tenant's only
    page, _ = store.retention.retention_candidates(retain=1000, limit=10, after=(tenant, ""))
    assert (tenant, sid) in page
    types = [e.type for e in store.reads.turn_events(tenant, sid, "old-250")]
    assert types == list(PLAIN)
    # the turn ends: the session comes down to its retention, and no further
    set_state(database_url, tenant, sid, "old-250", "completed")
    assert store.retention.prune(tenant, sid, **keep).earliest_seq == 1401
    assert store.retention.prune(tenant, sid, **keep).earliest_seq == 1801
    last = store.retention.prune(tenant, sid, **keep)
    assert (last.deleted, last.earliest_seq) == (201, head - 1000 + 1)
    assert store.retention.prune(tenant, sid, **keep).deleted == 0
    assert len(seqs(database_url, tenant, sid)) == 1000
    page, _ = store.retention.retention_candidates(retain=1000, limit=10, after=(tenant, ""))
    assert (tenant, sid) not in page  # (other tests' sessions may still be over it)
    # turn rows and results outlive their events
    assert counts(database_url, tenant, sid) == (750, 750)
    assert store.reads.get_turn(tenant, sid, "old-3").result == {"text": "answer 3"}
    assert store.reads.turn_events(tenant, sid, "old-3") == []
    no_violations(database_url, tenant)


def _steps(database_url: str, tenant: str, sid: str) -> set[tuple[str, str]]:
    with psycopg.connect(_pg(database_url)) as conn:
        rows = conn.execute(
            "SELECT turn_id, name FROM tool_steps WHERE tenant_id = %s AND session_id = %s",
            (tenant, sid),
        ).fetchall()
    return {(r[0], r[1]) for r in rows}


def test_prune_deletes_the_tool_steps_of_turns_ended_long_ago_in_batches(
    store: Store, database_url: str, tenant: str, sid: str
) -> None:
    long_journal(database_url, tenant, sid, 4)
    set_state(database_url, tenant, sid, "old-3", "waiting")
    with psycopg.connect(_pg(database_url), autocommit=True) as conn:
        for turn, name in [
            ("old-0", "a"),
            ("old-0", "b"),
            ("old-1", "a"),
            ("old-2", "a"),
            ("old-3", "a"),
        ]:
            conn.execute(
                "INSERT INTO tool_steps (tenant_id, session_id, turn_id, step, name, result)"
                " VALUES (%s, %s, %s, 2, %s, '1')",
                (tenant, sid, turn, name),
            )
        # old-0 and old-1 ended two days ago, old-2 just now; old-3 waits (long since)
        conn.execute(
            "UPDATE turns SET updated_at = now() - interval '2 days'"
            " WHERE tenant_id = %s AND session_id = %s AND turn_id IN ('old-0', 'old-1', 'old-3')",
            (tenant, sid),
        )
    keep = {"retain": 1000, "window_rows": 10, "steps_grace": 3600.0}
    # nothing of the journal goes (under its retention); the steps go a batch at a time
    first = store.retention.prune(tenant, sid, batch=2, **keep)
    assert (first.deleted, first.steps_deleted) == (0, 2)
    second = store.retention.prune(tenant, sid, batch=2, **keep)
    assert second.steps_deleted == 1
    assert store.retention.prune(tenant, sid, batch=2, **keep).steps_deleted == 0
    # kept: the turn that ended within the grace, and the one still waiting
    assert _steps(database_url, tenant, sid) == {("old-2", "a"), ("old-3", "a")}
    # with no grace, the ended one goes too; a waiting turn's steps never
    assert (
        store.retention.prune(tenant, sid, batch=10, **{**keep, "steps_grace": 0}).steps_deleted
        == 1
    )
    assert _steps(database_url, tenant, sid) == {("old-3", "a")}


def test_prune_keeps_the_context_window(
    store: Store, database_url: str, tenant: str, sid: str
) -> None:
    big = {"retain": 10, "batch": 100_000}
    # no compaction: the newest 100 conversation rows are 50 turns of six events back
    asked = f"{sid}-asked"
    head = long_journal(database_url, tenant, asked, 200, kinds=ASKED)
    pruned = store.retention.prune(tenant, asked, window_rows=100, **big)
    assert pruned.earliest_seq == head - 300 + 1  # beyond the 2 x 100 newest events
    events, _ = store.reads.list_events(tenant, asked, after=pruned.earliest_seq - 1, limit=1000)
    conversation = [e for e in events if e.type in ("turn.accepted", "model.completed")]
    assert len(conversation) == 100 and events[0].type == "turn.accepted"
    # a compaction: the newest one and everything after its to_seq stay
    compacted = f"{sid}-c"
    head = long_journal(database_url, tenant, compacted, 500)  # 2,000 events
    older = append_compaction(database_url, tenant, compacted, to_seq=600)
    newest = append_compaction(database_url, tenant, compacted, to_seq=1200)
    assert store.retention.prune(tenant, compacted, window_rows=5, **big).earliest_seq == 1201
    assert seqs(database_url, tenant, compacted) == list(range(1201, newest + 1))
    assert older == head + 1 and newest == head + 2
    # one whose source range runs up to itself: it is kept, and all after it
    last = append_compaction(database_url, tenant, compacted, to_seq=newest + 5)
    done = store.retention.prune(tenant, compacted, retain=1, batch=100_000, window_rows=5)
    assert done.earliest_seq == last and seqs(database_url, tenant, compacted) == [last]
    no_violations(database_url, tenant)


def test_two_prunes_at_once_delete_each_event_once(
    store: Store, database_url: str, tenant: str, sid: str
) -> None:
    head = long_journal(database_url, tenant, sid, 1000)
    results: list[int] = []

    def prune() -> None:
        results.append(
            store.retention.prune(tenant, sid, retain=100, batch=5000, window_rows=10).deleted
        )

    threads = [threading.Thread(target=prune) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert sum(results) == head - 100
    assert store.reads.get_session(tenant, sid).earliest_seq == head - 100 + 1
    no_violations(database_url, tenant)


# -- over HTTP ------------------------------------------------------------------


@pytest.fixture(scope="module")
def api(service_env: dict[str, str]) -> Iterator[Api]:
    with serve_api(service_env, sse_heartbeat=0.3) as handle:
        yield handle


@pytest.fixture
def publisher(redis_url: str) -> Iterator[Publisher]:
    client = redis.Redis.from_url(redis_url)
    yield Publisher(client)
    client.close()


def pruned_session(api: Api, store: Store, database_url: str, sid: str) -> tuple[int, int]:
    """A session of tenant a: 400 turns (1,600 events) pruned to its newest 500.
    Returns (earliest, head)."""
    head = long_journal(database_url, api.tenant_a, sid, 400)
    pruned = store.retention.prune(api.tenant_a, sid, retain=500, batch=5000, window_rows=10)
    assert pruned.earliest_seq == head - 500 + 1
    return pruned.earliest_seq, head


def test_json_page_says_the_earliest_seq_and_a_cursor_before_it_is_410(
    api: Api, store: Store, database_url: str, sid: str
) -> None:
    earliest, head = pruned_session(api, store, database_url, sid)
    c = api.client()
    r = c.get(f"/v1/sessions/{sid}/events?after={earliest - 1}&limit=3", headers=JSON)
    assert r.status_code == 200
    page = r.json()
    assert [e["seq"] for e in page["events"]] == [earliest, earliest + 1, earliest + 2]
    assert (page["earliest_seq"], page["head_seq"]) == (earliest, head)
    # no cursor at all: from the earliest retained event (nothing seen, no gap)
    r = c.get(f"/v1/sessions/{sid}/events?limit=2", headers=JSON)
    assert [e["seq"] for e in r.json()["events"]] == [earliest, earliest + 1]
    assert r.json()["next_after"] == earliest + 1
    for cursor in (0, earliest - 2):
        for query, headers in ((f"?after={cursor}", {}), ("", {"Last-Event-ID": str(cursor)})):
            r = c.get(f"/v1/sessions/{sid}/events{query}", headers={**JSON, **headers})
            assert r.status_code == 410, r.text
            body = r.json()
            assert r.headers["content-type"] == "application/problem+json"
            assert body["code"] == "resync_required"
            assert (body["requested"], body["earliest"], body["latest"]) == (
                cursor,
                earliest,
                head,
            )
    # a fresh session says 1
    fresh = f"{sid}-fresh"
    admit(c, fresh, "t1")
    r = c.get(f"/v1/sessions/{fresh}/events", headers=JSON)
    assert r.json()["earliest_seq"] == 1


def read_sse(
    api: Api,
    path: str,
    headers: dict[str, str],
    until: int,
    timeout: float = 60,
    heard: threading.Event | None = None,
) -> tuple[httpx.Response, list[SseFrame], list[str]]:
    """Frames of one SSE request until seq ``until`` (or its end); and its comments.
    ``heard`` is set once a comment (a heartbeat) arrived."""
    frames: list[SseFrame] = []
    comments: list[str] = []
    auth = {"Authorization": f"Bearer {api.token_a}"}
    with (
        httpx.Client(base_url=api.url, timeout=httpx.Timeout(timeout)) as c,
        c.stream("GET", path, headers={**headers, **auth}) as r,
    ):
        if r.status_code != 200:
            r.read()
            return r, frames, comments
        lines: list[str] = []
        for line in r.iter_lines():
            if line.startswith(":"):
                comments.append(line)
                if heard is not None:
                    heard.set()
            lines.append(line)
            if line == "":
                frames.extend(f for f in parse_sse(iter(lines)) if f is not None)
                lines = []
                if frames and frames[-1].id is not None and frames[-1].id >= until:
                    break
    return r, frames, comments


def test_sse_from_before_the_cut_is_410_and_from_the_cut_gets_every_event_once(
    api: Api, store: Store, publisher: Publisher, database_url: str, sid: str
) -> None:
    earliest, head = pruned_session(api, store, database_url, sid)
    for headers, query in (({"Last-Event-ID": str(earliest - 2)}, ""), ({}, "?after=0")):
        r, _, _ = read_sse(api, f"/v1/sessions/{sid}/events{query}", {**SSE, **headers}, 0)
        assert r.status_code == 410
        body = r.json()
        assert body["code"] == "resync_required"
        assert (body["requested"], body["earliest"], body["latest"]) == (
            int(headers.get("Last-Event-ID", "0")),
            earliest,
            head,
        )
    # from the cut, while a new turn commits events live
    assert admit(api.client(), sid, "live").status_code == 202
    stepper = Stepper(store, publisher, api.tenant_a, sid, "live")
    done, heard = threading.Event(), threading.Event()

    def commit() -> None:
        # once the stream has sent a heartbeat: the one it carries is checked below
        if not heard.wait(60):
            return
        stepper.start()
        for i in range(20):
            stepper.model(f"live {i}", publish=i % 4 != 1)  # some publishes lost
        stepper.complete({"text": "done"})
        done.set()

    final = head + 1 + 1 + 20 + 1
    writer = threading.Thread(target=commit, daemon=True)
    writer.start()
    r, frames, comments = read_sse(
        api,
        f"/v1/sessions/{sid}/events",
        {**SSE, "Last-Event-ID": str(earliest - 1)},
        final,
        heard=heard,
    )
    writer.join(60)
    assert done.is_set()
    assert r.status_code == 200 and r.headers["turnkeep-earliest-seq"] == str(earliest)
    ids = [f.id for f in frames if f.id is not None]
    assert ids == list(range(earliest, final + 1))  # every event once, in order
    assert f": heartbeat earliest_seq={earliest}" in comments
    # a new follower with no cursor starts at the earliest retained event
    r, frames, _ = read_sse(api, f"/v1/sessions/{sid}/events", SSE, final)
    assert r.status_code == 200
    assert [f.id for f in frames if f.id is not None] == list(range(earliest, final + 1))


def test_messages_page_through_a_long_session_with_a_cursor(
    api: Api, store: Store, database_url: str, sid: str
) -> None:
    turns = 1500  # 6,000 events, 3,000 messages
    long_journal(database_url, api.tenant_a, sid, turns)
    c = api.client()
    messages: list[dict[str, Any]] = []
    after: int | None = None
    pages = 0
    while True:
        query = "?limit=400" + ("" if after is None else f"&after={after}")
        r = c.get(f"/v1/sessions/{sid}/messages{query}")
        assert r.status_code == 200, r.text
        body = r.json()
        assert len(body["messages"]) <= 400 and body["earliest_seq"] == 1
        messages += body["messages"]
        pages += 1
        after = body["next"]
        if after is None:
            break
    assert pages == 8  # 3,000 conversation events, 400 a page
    want = [m for i in range(turns) for m in (f"question {i}", f"answer {i}")]
    assert [m["content"] for m in messages] == want
    assert messages[1] == {"role": "assistant", "content": "answer 0", "turn_id": "old-0", "seq": 3}
    # pruned: no cursor starts at the earliest retained event; one before it is 410
    pruned = store.retention.prune(api.tenant_a, sid, retain=1000, batch=10_000, window_rows=10)
    body = c.get(f"/v1/sessions/{sid}/messages?limit=2").json()
    assert body["earliest_seq"] == pruned.earliest_seq == 5001
    assert [m["seq"] for m in body["messages"]] == [5001, 5003]
    assert body["next"] == 5003
    r = c.get(f"/v1/sessions/{sid}/messages?after=0")
    assert r.status_code == 410 and r.json()["earliest"] == 5001
    for bad in ("limit=0", "limit=1001", "after=-1", "after=x"):
        r = c.get(f"/v1/sessions/{sid}/messages?{bad}")
        assert r.status_code == 422, bad


def test_a_slow_sse_reader_is_cut_off_with_resume_and_resumes_from_the_journal(
    service_env: dict[str, str], store: Store, publisher: Publisher, sid: str
) -> None:
    with serve_api(service_env, sse_heartbeat=0.5, sse_backlog=20) as api:
        c = api.client()
        assert admit(c, sid, "t1").status_code == 202
        stepper = Stepper(store, publisher, api.tenant_a, sid, "t1")
        stepper.start()
        auth = {"Authorization": f"Bearer {api.token_a}"}
        blob = "x" * 256 * 1024
        with (
            httpx.Client(base_url=api.url, timeout=httpx.Timeout(30)) as hc,
            hc.stream("GET", f"/v1/sessions/{sid}/events", headers={**SSE, **auth}) as r,
        ):
            assert r.status_code == 200
            lines = r.iter_lines()
            first = [next(lines) for _ in range(4)]  # seq 1's frame
            assert first[0] == "id: 1"
            # the reader stops reading; the session goes on: deltas (megabytes of
            # them, more than the sockets hold) and committed events
            for i in range(120):
                publisher.delta(api.tenant_a, sid, "t1", 1, blob)
                if i % 40 == 0:
                    stepper.model(f"step {i}")
            # it reads again: what was sent before the cut, then the final frame
            frames = [f for f in parse_sse(iter([*first, *lines])) if f]
        ids = [f.id for f in frames if f.id is not None]
        assert frames[-1].event == "stream.resume" and frames[-1].id is None
        after = frames[-1].data["after"]
        assert frames[-1].data == {"reason": "lagging", "after": after}
        assert after == ids[-1] and ids == list(range(1, after + 1))
        deltas = [f for f in frames if f.event == "model.delta"]
        assert 0 < len(deltas) < 120  # the rest were never buffered
        # resumed from the last delivered seq: the journal fills the gap, once
        stepper.model("after the cut")
        head = store.reads.get_session(api.tenant_a, sid).head_seq
        _, more, _ = read_sse(
            api, f"/v1/sessions/{sid}/events", {**SSE, "Last-Event-ID": str(after)}, head
        )
        assert [f.id for f in more if f.id is not None] == list(range(after + 1, head + 1))


# -- the beat task ------------------------------------------------------------------


def test_beat_runs_the_prune_through_a_worker(
    procs: Any, store: Store, database_url: str, tenant: str, sid: str
) -> None:
    head = long_journal(database_url, tenant, sid, 750, agent="memory")  # 3,000 events
    env = {
        "TURNKEEP_RETAIN_EVENTS": "500",
        "TURNKEEP_RETENTION_BATCH": "1000",
        "TURNKEEP_RETENTION_INTERVAL": "0.5",
        "TURNKEEP_CONTEXT_WINDOW_ROWS": "20",
    }
    procs.worker(env)
    procs.beat(env)
    seen: set[int] = set()

    def cut() -> bool:
        earliest = store.reads.get_session(tenant, sid).earliest_seq
        seen.add(earliest)
        return earliest == head - 500 + 1

    wait_for(cut, 90, interval=0.05, what="the prune to reach the retention")
    # at most 1,000 events a statement: the cut moved in steps
    assert {1, head - 500 + 1} < seen, seen
    assert len(seqs(database_url, tenant, sid)) == 500
    log = "".join(p.text() for p in procs.started)
    assert "turnkeep.prune_journal" in log
    no_violations(database_url, tenant)
