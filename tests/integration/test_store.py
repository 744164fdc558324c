"""The store against the real Postgres and Redis: schema, migrations, lease scripts,
fenced writes."""

from __future__ import annotations

import json
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import psycopg
import pytest
import redis
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import create_engine

from tests.conftest import PG_ADMIN, _sqlalchemy_url
from turnkeep.runtime.states import EventType, TurnState
from turnkeep.store.db import Database
from turnkeep.store.errors import LeaseLost, OutcomeAlreadyRecorded
from turnkeep.store.keys import fence_key
from turnkeep.store.lease import LeaseManager
from turnkeep.store.new_turn import NewTurn
from turnkeep.store.schema import SEQUENCES, TENANT_TABLES, metadata
from turnkeep.store.step_commit import StepCommit

# the tests' own tables (tests/agents.py) live in the same database; compare ours only
OURS = sorted(metadata.tables)


def _append(store: Any, tenant_id: str, session_id: str, fence: int, **fields: Any) -> Any:
    """``Store.turns.append`` of a commit given as its fields."""
    return store.turns.append(tenant_id, session_id, fence, StepCommit(**fields))


def _catalog(url: str) -> list[tuple[object, ...]]:
    """Columns, constraints and indexes as Postgres itself describes them."""
    with psycopg.connect(url.replace("postgresql+psycopg://", "postgresql://")) as conn:
        cols = conn.execute(
            "SELECT table_name, column_name, data_type, is_nullable, column_default, "
            "is_identity FROM information_schema.columns WHERE table_schema = 'public' "
            "AND table_name = ANY(%(ours)s) ORDER BY 1, 2",
            {"ours": OURS},
        ).fetchall()
        cons = conn.execute(
            "SELECT conrelid::regclass::text, conname, pg_get_constraintdef(oid) "
            "FROM pg_constraint WHERE connamespace = 'public'::regnamespace "
            "AND conrelid::regclass::text = ANY(%(ours)s) ORDER BY 1, 2",
            {"ours": OURS},
        ).fetchall()
        idx = conn.execute(
            "SELECT tablename, indexname, indexdef FROM pg_indexes WHERE schemaname = 'public' "
            "AND tablename = ANY(%(ours)s) ORDER BY 1, 2",
            {"ours": OURS},
        ).fetchall()
        # row-level security (forced), its policies, and what each role was granted
        rls = conn.execute(
            "SELECT relname, relkind, relrowsecurity, relforcerowsecurity, relacl::text "
            "FROM pg_class WHERE relnamespace = 'public'::regnamespace "
            "AND relname = ANY(%(ours)s || %(seqs)s::text[]) ORDER BY 1",
            {"ours": OURS, "seqs": list(SEQUENCES)},
        ).fetchall()
        pol = conn.execute(
            "SELECT tablename, policyname, permissive, roles::text, cmd, qual, with_check "
            "FROM pg_policies WHERE schemaname = 'public' AND tablename = ANY(%(ours)s) "
            "ORDER BY 1, 2",
            {"ours": OURS},
        ).fetchall()
    return [*cols, *cons, *idx, *rls, *pol]


def test_migrations_replay_to_exactly_the_declared_schema(database_url):
    # 1. alembic's own comparison finds nothing to generate
    engine = create_engine(database_url)
    with engine.connect() as conn:
        ctx = MigrationContext.configure(
            conn,
            opts={"include_name": lambda name, kind, _: kind != "table" or name in OURS},
        )
        diff = compare_metadata(ctx, metadata)
    engine.dispose()
    assert diff == []
    # 2. and Postgres describes both databases identically, indexes' predicates included
    name = f"turnkeep_schema_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        other = _sqlalchemy_url(name)
        e2 = create_engine(other)
        metadata.create_all(e2)
        e2.dispose()
        ours = _catalog(database_url)
        assert _catalog(other) == ours
        # every tenant-keyed table is under the forced tenant policy
        forced = {r[0] for r in ours if len(r) == 5 and r[1] == "r" and r[2] and r[3]}
        assert forced == set(TENANT_TABLES)
    finally:
        with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def leases(redis_url):
    return LeaseManager(redis.Redis.from_url(redis_url), ttl=5)


def test_lease_grant_renew_release_are_owner_checked(leases, tenant, sid):
    a = leases.grant(tenant, sid, "a", floor=0)
    assert a is not None
    assert leases.grant(tenant, sid, "b", floor=0) is None
    assert leases.renew(a)
    b_view = type(a)(tenant, sid, "b", a.fence)
    assert not leases.renew(b_view) and not leases.release(b_view).released
    released = leases.release(a)
    # the busy grant of "b" left a rerun flag: the holder's release reports it, once
    assert released.released and released.rerun
    assert not leases.renew(a)
    b = leases.grant(tenant, sid, "b", floor=0)
    assert b is not None and b.fence > a.fence
    assert leases.release(b) == type(released)(released=True, rerun=False)


def test_the_fence_floor_is_read_only_when_redis_lost_its_counter(leases, tenant, sid):
    reads = []

    def floor():
        reads.append(1)
        return 500

    counter = leases.client.incr(fence_key())  # exists, as in normal operation
    first = leases.grant(tenant, sid, "a", floor=floor)
    assert first is not None and first.fence == counter + 1 and reads == []
    leases.release(first)
    leases.client.delete(fence_key())  # as after a Redis restart or FLUSHALL
    second = leases.grant(tenant, sid, "a", floor=floor)
    assert second is not None and second.fence == 501 and reads == [1]
    leases.release(second)
    leases.raise_floor(90_000)
    leases.raise_floor(10)  # never lowers it
    assert int(leases.client.get(fence_key())) == 90_000


def test_lease_tokens_are_floored_to_the_postgres_fence(leases, tenant, sid):
    leases.client.delete(fence_key())  # as after FLUSHALL
    lease = leases.grant(tenant, sid, "a", floor=10_000)
    assert lease is not None and lease.fence == 10_001
    leases.release(lease)
    assert leases.grant(tenant, sid, "a", floor=0).fence == 10_002


def test_json_columns_read_back_the_values_json_loads_gives(database_url):
    # the pool decodes json and jsonb with the hot path's codec (runtime/jsonwire.py):
    # values as the standard library reads Postgres's own text, numbers beyond a double
    # included
    texts = [
        '{"b": 1, "a": [0.1, 1e16, 5e-324, 18446744073709551617, -0.0, null, true]}',
        '{"s": "é 日本 \\u0001 \\" 😀", "n": 1e400}',
        '[{"deep": {"deeper": []}}, "x", 3]',
    ]
    db = Database(database_url, size=1)
    try:
        for text in texts:
            # the json column keeps the text as given; jsonb reads back in its own spelling
            t = "CAST(%(t)s AS text)"
            sql = f"SELECT CAST({t} AS jsonb) AS b, CAST({t} AS json) AS j"
            [row] = db.rows(sql + f", CAST(CAST({t} AS jsonb) AS text) AS bt", {"t": text})
            assert row["j"] == json.loads(text)
            assert row["b"] == json.loads(row["bt"])
    finally:
        db.close()


def _admit(store, tenant, sid, tid="t1"):
    return store.turns.admit(
        NewTurn(
            tenant_id=tenant,
            session_id=sid,
            turn_id=tid,
            agent_name="demo",
            agent_hash="h",
            input_hash="i" + tid,
            input={"messages": []},
            output_schema=None,
            budget=None,
        )
    )


def test_fenced_append_refuses_old_fences_and_stale_revisions(store, tenant, sid):
    _admit(store, tenant, sid)
    assert store.turns.claim(tenant, sid, 5)
    assert not store.turns.claim(tenant, sid, 5) and not store.turns.claim(tenant, sid, 4)
    kw = dict(tenant_id=tenant, session_id=sid, turn_id="t1", state=TurnState.RUNNING)
    ap = _append(
        store, **kw, fence=5, revision=0, type=EventType.TURN_STARTED, data={}, attempt_inc=1
    )
    assert (ap.seq, ap.revision, ap.attempt) == (2, 1, 1)
    with pytest.raises(LeaseLost):
        _append(store, **kw, fence=4, revision=1, type=EventType.MODEL_COMPLETED, data={}, step=1)
    with pytest.raises(LeaseLost):
        _append(store, **kw, fence=5, revision=0, type=EventType.MODEL_COMPLETED, data={}, step=1)
    assert store.turns.claim(tenant, sid, 6)
    with pytest.raises(LeaseLost):  # a newer fence was accepted: the old holder is out
        _append(store, **kw, fence=5, revision=1, type=EventType.MODEL_COMPLETED, data={}, step=1)
    _append(store, **kw, fence=6, revision=1, type=EventType.MODEL_COMPLETED, data={}, step=1)
    with pytest.raises(OutcomeAlreadyRecorded):
        _append(store, **kw, fence=6, revision=2, type=EventType.TOOL_COMPLETED, data={}, step=1)
    events, head = store.reads.list_events(tenant, sid, after=0)
    assert [e.seq for e in events] == [1, 2, 3] and head == 3  # refused writes took no seq


def test_terminal_turns_never_change(store, tenant, sid):
    _admit(store, tenant, sid)
    store.turns.claim(tenant, sid, 1)
    kw = dict(tenant_id=tenant, session_id=sid, turn_id="t1", fence=1)
    _append(store, **kw, revision=0, state=TurnState.RUNNING, type=EventType.TURN_STARTED, data={})
    _append(
        store,
        **kw,
        revision=1,
        state=TurnState.COMPLETED,
        type=EventType.TURN_COMPLETED,
        data={},
        result={"text": "x"},
    )
    with pytest.raises(LeaseLost):
        _append(
            store, **kw, revision=2, state=TurnState.RUNNING, type=EventType.TURN_STARTED, data={}
        )
    assert store.reads.get_turn(tenant, sid, "t1").state is TurnState.COMPLETED


def test_postgres_refuses_a_transition_the_state_machine_does_not_declare(store, tenant, sid):
    # queued -> completed skips running: refused by the statement itself, whatever the
    # caller believes; nothing written, no seq taken
    _admit(store, tenant, sid)
    store.turns.claim(tenant, sid, 1)
    head = store.reads.get_session(tenant, sid).head_seq
    with pytest.raises(LeaseLost):
        store.turns.append(
            tenant,
            sid,
            1,
            StepCommit(
                turn_id="t1",
                revision=0,
                state=TurnState.COMPLETED,
                type=EventType.TURN_COMPLETED,
                data={},
            ),
        )
    assert store.reads.get_turn(tenant, sid, "t1").state is TurnState.QUEUED
    assert store.reads.get_session(tenant, sid).head_seq == head


def test_start_claims_starts_and_returns_the_context_in_one_statement(store, tenant, sid):
    _admit(store, tenant, sid, "t0")
    _admit(store, tenant, sid, "t1")
    agent_hash = store.reads.get_turn(tenant, sid, "t0").agent_hash
    hashes = [agent_hash]
    lost = store.turns.start(tenant, sid, 0, claim=True, agent_hashes=hashes, max_attempts=3)
    assert not lost.claimed and lost.turn is None and lost.stored_fence == 0
    s = store.turns.start(tenant, sid, 4, claim=True, agent_hashes=hashes, max_attempts=3)
    assert s.claimed and s.turn is not None and s.turn.turn_id == "t0"
    assert s.turn.state is TurnState.RUNNING and s.turn.attempt == 1
    assert [e.type for e in s.events] == ["turn.accepted", "turn.started"]
    assert s.events[-1].fence == 4 and s.events[-1].data == {"attempt": 1}
    assert store.reads.get_session(tenant, sid).fence == 4
    # a second claim of the same fence is refused; confirming it (claim=False) is not
    again = store.turns.start(tenant, sid, 4, claim=True, agent_hashes=hashes, max_attempts=3)
    assert not again.claimed and again.stored_fence == 4 and again.turn is None
    # settle t0 with its final outcome and the terminal event in one statement
    ap = store.turns.append(
        tenant,
        sid,
        4,
        StepCommit(
            turn_id="t0",
            revision=s.turn.revision,
            state=TurnState.COMPLETED,
            type=EventType.MODEL_COMPLETED,
            step=1,
            data={"message": {"role": "assistant", "content": "done"}},
            result={"text": "done"},
            then=(EventType.TURN_COMPLETED, {"result": {"text": "done"}}),
        ),
    )
    assert [e.type for e in ap.events] == ["model.completed", "turn.completed"]
    assert ap.events[1].seq == ap.events[0].seq + 1 and ap.lane_runnable
    nxt = store.turns.start(tenant, sid, 4, claim=False, agent_hashes=hashes, max_attempts=3)
    assert nxt.turn is not None and nxt.turn.turn_id == "t1"
    assert [e.type for e in nxt.prior] == ["turn.accepted", "model.completed"]
    # an agent definition this worker does not serve: the head is returned, not started
    s2 = store.turns.start(tenant, sid, 5, claim=True, agent_hashes=["other"], max_attempts=3)
    assert s2.claimed and s2.turn is None and s2.head is not None
    assert s2.head.turn_id == "t1" and s2.head.attempt == 1
    # at the attempt cap: not started either
    s3 = store.turns.start(tenant, sid, 6, claim=True, agent_hashes=hashes, max_attempts=1)
    assert s3.claimed and s3.turn is None and s3.head.attempt == 1
    seqs = [e.seq for e in store.reads.list_events(tenant, sid, after=0)[0]]
    assert seqs == list(range(1, len(seqs) + 1))


def test_admissions_and_steps_of_one_session_interleave_without_gaps(store, tenant, sid):
    _admit(store, tenant, sid, "t0")
    store.turns.claim(tenant, sid, 1)
    kw = dict(tenant_id=tenant, session_id=sid, turn_id="t0", fence=1, state=TurnState.RUNNING)
    rev = _append(store, **kw, revision=0, type=EventType.TURN_STARTED, data={}).revision

    def steps():
        nonlocal rev
        for i in range(1, 41):
            rev = _append(
                store, **kw, revision=rev, type=EventType.MODEL_COMPLETED, data={}, step=i
            ).revision

    with ThreadPoolExecutor(4) as pool:
        futs = [pool.submit(steps)] + [
            pool.submit(_admit, store, tenant, sid, f"a{i}") for i in range(40)
        ]
        for f in futs:
            f.result()
    events, head = store.reads.list_events(tenant, sid, after=0, limit=1000)
    assert [e.seq for e in events] == list(range(1, head + 1))
    assert head == 1 + 1 + 40 + 40


def test_one_keeper_renews_every_held_lease_and_notices_a_lost_one(redis_url, tenant, caplog):
    import time

    from tests.procs import wait_for
    from turnkeep.worker.heartbeat import Heartbeat, LeaseKeeper

    # renewed every second: a keeper thread held up for less than 1.4 s (a loaded
    # machine) still renews in time
    ttl = 3.0
    leases = LeaseManager(redis.Redis.from_url(redis_url), ttl=ttl)
    beats = []
    granted = time.monotonic()
    for i in range(5):
        t0 = time.monotonic()
        lease = leases.grant(tenant, f"s{i}", "me", floor=0)
        beats.append(Heartbeat(leases, lease, granted_at=t0).start())
    # a deliberate wait past the grants' own expiry: alive only because they were renewed
    time.sleep(max(0.0, granted + 1.5 * ttl - time.monotonic()))
    assert [b.lost for b in beats] == [False] * 5
    assert all(leases.holder(tenant, f"s{i}") for i in range(5))
    assert len({id(b._keeper) for b in beats}) == 1 and LeaseKeeper.of(leases) is beats[0]._keeper
    leases.client.delete(beats[0].lease.key)  # as a FLUSHALL or a takeover would
    # the keeper's renewal finds it gone (said in its log), not only its deadline passing
    wait_for(
        lambda: "lease for a session is gone" in caplog.text,
        60,
        interval=0.05,
        what="the keeper to find the lease gone",
    )
    with pytest.raises(LeaseLost):
        beats[0].check()
    beats[1].check()
    for b in beats[1:]:
        b.stop()
    # stopped: no longer renewed, so Redis lets them expire
    wait_for(lambda: leases.holder(tenant, "s1") is None, 60, what="the stopped lease to expire")
