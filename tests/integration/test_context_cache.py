"""A worker's kept context window (store/context_cache.py) against the real start
statement: a start that extends it must give the model what a start that read the
whole window gives, across takeovers, forks, reruns, compactions, prunes, erasure and
tenants. The reference is start_turn run cold (no window named) in a transaction
rolled back, just before the start under test."""

from __future__ import annotations

import json
import uuid
from typing import Any

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from psycopg.rows import dict_row

from tests.journals import chat_journal, explain_rows
from turnkeep.runtime import plan
from turnkeep.runtime.messages import Message
from turnkeep.runtime.states import EventType, TurnState
from turnkeep.store.context_cache import NO_WINDOW, ContextCache
from turnkeep.store.erasure import Reason
from turnkeep.store.facade import Store
from turnkeep.store.new_turn import NewTurn
from turnkeep.store.records import LaneStarted
from turnkeep.store.sql import q
from turnkeep.store.step_commit import StepCommit
from turnkeep.store.turns import started_from

H = "h-cache"


def _pg(url: str) -> str:
    return url.replace("postgresql+psycopg://", "postgresql://", 1)


@pytest.fixture(scope="module")
def stores(service_env: dict[str, str]) -> Any:
    """Two workers' stores (their own caches) with a small window, so it fills."""
    url = service_env["TURNKEEP_DATABASE_URL"]
    a = Store.from_url(url, pool_size=4)
    b = Store.from_url(url, pool_size=4)
    for s in (a, b):
        s.turns.window_rows = s.max_running.window_rows = 9
        s.turns.window_bytes = s.max_running.window_bytes = 3000
    yield a, b
    a.close()
    b.close()


def _admit(store: Store, tenant: str, sid: str, text: str) -> str:
    tid = uuid.uuid4().hex[:10]
    messages = [{"role": "user", "content": text}]
    store.turns.admit(
        NewTurn(
            tenant_id=tenant,
            session_id=sid,
            turn_id=tid,
            agent_name="demo",
            agent_hash=H,
            input_hash=tid,
            input={"messages": messages},
            output_schema=None,
            budget=None,
        )
    )
    return tid


class Chat:
    """One session driven as workers drive it, each start checked against the cold one."""

    def __init__(self, database_url: str, tenant: str, sid: str) -> None:
        self.url, self.tenant, self.sid = database_url, tenant, sid
        self.fence = 0
        self.n = 0

    def cold(self, store: Store, fence: int) -> tuple[LaneStarted, list[Message]]:
        """What start_turn reads with no window named, rolled back."""
        params = {
            "tenant_id": self.tenant,
            "session_id": self.sid,
            "fence": fence,
            "claim": True,
            "agent_hashes": [H],
            "max_attempts": 9,
            "window_rows": store.turns.window_rows,
            "window_bytes": store.turns.window_bytes,
            **NO_WINDOW,
        }
        with psycopg.connect(_pg(self.url), row_factory=dict_row) as conn:
            row = conn.execute(q("start_turn"), params).fetchone()
            conn.rollback()
        started = started_from(row, self.tenant, self.sid, fence, ContextCache(), None, store.turns)
        return started, _transcript(started)

    def start(self, store: Store) -> tuple[LaneStarted, bool]:
        """Start the head under ``store`` (a higher fence), checked against the cold
        read; whether it extended a kept window."""
        self.fence += 1
        expected, told = self.cold(store, self.fence)
        warm = store.context.warm
        started = store.turns.start(
            self.tenant, self.sid, self.fence, claim=True, agent_hashes=[H], max_attempts=9
        )
        assert started.turn is not None
        assert [(e.seq, e.type, e.data) for e in started.prior] == [
            (e.seq, e.type, e.data) for e in expected.prior
        ]
        assert _transcript(started) == told
        return started, store.context.warm > warm

    def run(self, store: Store, started: LaneStarted, steps: int, *, settle: bool = True) -> None:
        """``steps`` steps (a tool call and its result, in turn), then the answer."""
        turn = started.turn
        assert turn is not None
        revision = turn.revision
        for step in range(1, steps + 1):
            self.n += 1
            call = f"c{self.n}"
            if step % 2:
                data: dict[str, Any] = {
                    "message": {
                        "role": "assistant",
                        # up to about 1 kB: the window (3,000 bytes) is cut by bytes too
                        "content": f"looking {self.n}" + "." * (self.n * 379 % 1000),
                        "tool_calls": [{"id": call, "name": "get", "arguments": {"n": self.n}}],
                    },
                    "usage": {},
                }
                kind = EventType.MODEL_COMPLETED
            else:
                data = {
                    "message": {
                        "role": "tool",
                        "tool_call_id": f"c{self.n - 1}",
                        "name": "get",
                        "content": f"result {self.n}",
                    }
                }
                kind = EventType.TOOL_COMPLETED
            revision = store.turns.append(
                self.tenant,
                self.sid,
                self.fence,
                StepCommit(
                    turn_id=turn.turn_id,
                    revision=revision,
                    state=TurnState.RUNNING,
                    type=kind,
                    data=data,
                    step=step,
                ),
            ).revision
        if settle:
            self.settle(store, turn.turn_id, revision, steps + 1)

    def settle(self, store: Store, turn_id: str, revision: int, step: int) -> None:
        result = {"text": "done"}
        store.turns.append(
            self.tenant,
            self.sid,
            self.fence,
            StepCommit(
                turn_id=turn_id,
                revision=revision,
                state=TurnState.COMPLETED,
                type=EventType.MODEL_COMPLETED,
                data={"message": {"role": "assistant", "content": f"answer {turn_id}"}},
                step=step,
                then=(EventType.TURN_COMPLETED, {"result": result}),
                result=result,
            ),
        )

    def turn(self, store: Store, steps: int = 2) -> bool:
        """Admit a turn and run it under ``store``; whether its start was warm."""
        _admit(store, self.tenant, self.sid, f"question {self.n}")
        started, warm = self.start(store)
        self.run(store, started, steps)
        return warm


def _transcript(started: LaneStarted) -> list[Message]:
    assert started.turn is not None
    given = started.turn.input["messages"]
    return plan.transcript(given, started.events, started.prior, decoded=started.decoded)


def _chat(database_url: str, tenant: str | None = None, sid: str | None = None) -> Chat:
    return Chat(
        database_url, tenant or f"t-{uuid.uuid4().hex[:8]}", sid or f"s-{uuid.uuid4().hex[:8]}"
    )


def _compact(database_url: str, tenant: str, sid: str, to_seq: int) -> None:
    """A context.compacted summarising up to ``to_seq``, appended at the head by the
    session's newest turn (as a turn's worker appends it)."""
    with psycopg.connect(_pg(database_url), autocommit=True) as conn:
        conn.execute(
            """
            WITH s AS (
                UPDATE sessions SET head_seq = head_seq + 1
                WHERE tenant_id = %(t)s AND session_id = %(s)s RETURNING head_seq
            )
            INSERT INTO events (tenant_id, session_id, seq, turn_id, type, fence, data)
            SELECT %(t)s, %(s)s, s.head_seq,
                   (SELECT turn_id FROM turns WHERE tenant_id = %(t)s AND session_id = %(s)s
                    ORDER BY ordinal DESC LIMIT 1),
                   'context.compacted', 1, %(d)s
            FROM s
            """,
            {"t": tenant, "s": sid, "d": json.dumps({"summary": "S", "to_seq": to_seq})},
        )


def _epoch(database_url: str, tenant: str, sid: str) -> int:
    with psycopg.connect(_pg(database_url)) as conn:
        row = conn.execute(
            "SELECT context_epoch FROM sessions WHERE tenant_id = %s AND session_id = %s",
            (tenant, sid),
        ).fetchone()
    assert row is not None
    return int(row[0])


def test_a_chat_extends_its_window_and_fills_it(stores: Any, database_url: str) -> None:
    a, _ = stores
    chat = _chat(database_url)
    assert not chat.turn(a)  # nothing kept yet
    # the window (9 rows, 3,000 bytes) fills, then slides: each start extends it
    assert all(chat.turn(a, steps) for steps in (2, 4, 1, 3, 2, 5))


def test_a_takeover_is_the_rows_after_the_window(stores: Any, database_url: str) -> None:
    a, b = stores
    chat = _chat(database_url)
    chat.turn(a)
    chat.turn(a)
    # another worker takes the lease (a higher fence) and runs the next turns ...
    assert not chat.turn(b, 3)
    chat.turn(b, 1)
    # ... and a worker that still keeps its older window extends it by theirs
    assert chat.turn(a)
    # a takeover mid-turn: b starts the head, a takes it over before it settles
    _admit(a, chat.tenant, chat.sid, "taken over")
    started, _ = chat.start(b)
    chat.run(b, started, 3, settle=False)
    started, warm = chat.start(a)  # the same turn again, b's steps among its own
    assert warm and started.turn is not None
    chat.settle(a, started.turn.turn_id, started.turn.revision, 4)
    assert chat.turn(b)


def test_a_fork_is_another_session(stores: Any, database_url: str) -> None:
    a, _ = stores
    chat = _chat(database_url)
    for _ in range(3):
        chat.turn(a)
    head = a.reads.get_session(chat.tenant, chat.sid)
    fork = _chat(database_url, chat.tenant, f"{chat.sid}-fork")
    a.forks.fork(chat.tenant, chat.sid, fork.sid, at_seq=head.head_seq - 4)
    assert _epoch(database_url, chat.tenant, fork.sid) != _epoch(
        database_url, chat.tenant, chat.sid
    )
    fork.n, fork.fence = 100, chat.fence  # the fork keeps the source's fence
    assert not fork.turn(a)  # not the source's window
    assert fork.turn(a)
    assert chat.turn(a)  # the source's own still holds


def test_a_rerun_reads_its_source_s_window_then_the_chat_goes_on(
    stores: Any, database_url: str
) -> None:
    a, _ = stores
    chat = _chat(database_url)
    for _ in range(3):
        chat.turn(a)
    events, _ = a.reads.list_events(chat.tenant, chat.sid, after=0, limit=1000)
    source = [e for e in events if e.type == EventType.TURN_ACCEPTED.value][-2]
    tid = uuid.uuid4().hex[:10]
    a.reruns.admit_rerun(
        NewTurn(
            tenant_id=chat.tenant,
            session_id=chat.sid,
            turn_id=tid,
            agent_name="demo",
            agent_hash=H,
            input_hash=tid,
            input={
                "messages": [{"role": "user", "content": "again"}],
                "rerun": {"before_seq": source.seq},
            },
            output_schema=None,
            budget=None,
        ),
        [],
    )
    whole = a.context.whole
    started, warm = chat.start(a)  # the rerun: the window before its source, read whole
    assert not warm and a.context.whole == whole + 1
    chat.run(a, started, 2)
    assert chat.turn(a)  # the next turn: the rerun's rows after the kept window


def test_a_compaction_is_a_new_base(stores: Any, database_url: str) -> None:
    a, _ = stores
    chat = _chat(database_url)
    for _ in range(3):
        chat.turn(a)
    head = a.reads.get_session(chat.tenant, chat.sid)
    _compact(database_url, chat.tenant, chat.sid, head.head_seq - 3)
    assert not chat.turn(a)  # another base: read whole
    assert chat.turn(a)


def test_a_prune_moves_the_epoch(stores: Any, database_url: str) -> None:
    a, _ = stores
    chat = _chat(database_url)
    for _ in range(6):
        chat.turn(a, 3)
    before = _epoch(database_url, chat.tenant, chat.sid)
    pruned = a.retention.prune(chat.tenant, chat.sid, retain=1, batch=1000, window_rows=2)
    assert pruned.deleted > 0
    assert _epoch(database_url, chat.tenant, chat.sid) != before
    assert not chat.turn(a)  # the kept window may hold deleted rows: read whole
    assert chat.turn(a)


def test_an_erased_session_s_window_is_dropped_and_refused(stores: Any, database_url: str) -> None:
    a, b = stores
    chat = _chat(database_url)
    chat.turn(a)
    chat.turn(b)
    kept = b.context.get(chat.tenant, chat.sid)
    assert kept is not None
    a.erasure.tombstone(chat.tenant, chat.sid, reason=Reason.DELETED, deleted_by="test")
    assert a.context.get(chat.tenant, chat.sid) is None  # this process keeps nothing of it
    # another process's window is refused by the epoch the tombstone moved
    assert _epoch(database_url, chat.tenant, chat.sid) != kept.epoch


def test_another_tenant_s_session_of_the_same_id(stores: Any, database_url: str) -> None:
    a, _ = stores
    mine = _chat(database_url)
    theirs = _chat(database_url, sid=mine.sid)
    theirs.n = 50
    for _ in range(2):
        mine.turn(a)
        theirs.turn(a)
    assert mine.turn(a) and theirs.turn(a)  # each its own, keyed by tenant
    # a window named for the wrong session is refused by the database: its epoch
    kept = a.context.get(mine.tenant, mine.sid)
    assert kept is not None
    a.context.put(theirs.tenant, theirs.sid, kept)
    assert not theirs.turn(a)


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    turns=st.lists(
        st.tuples(
            st.integers(0, 5),  # steps
            st.booleans(),  # the next turn is admitted while this one runs
            st.sampled_from(["a", "b"]),  # the worker that runs it
            st.sampled_from([None, None, None, "compact", "prune"]),
        ),
        min_size=2,
        max_size=7,
    )
)
def test_the_transcript_is_the_one_read_whole(
    stores: Any, database_url: str, turns: list[tuple[int, bool, str, str | None]]
) -> None:
    """Whatever the journal, every start (Chat.start) gives what the cold read gives."""
    a, b = stores
    chat = _chat(database_url)
    admitted = False
    for steps, early, who, then in turns:
        store = a if who == "a" else b
        if not admitted:
            _admit(store, chat.tenant, chat.sid, f"question {chat.n}")
        started, _ = chat.start(store)
        admitted = early
        if early:  # its turn.accepted before this turn's outcomes
            _admit(store, chat.tenant, chat.sid, f"early {chat.n}")
        chat.run(store, started, steps)
        head = store.reads.get_session(chat.tenant, chat.sid)
        if then == "compact":
            _compact(database_url, chat.tenant, chat.sid, head.head_seq - 2)
        elif then == "prune":
            store.retention.prune(chat.tenant, chat.sid, retain=3, batch=1000, window_rows=3)


def test_a_warm_start_reads_the_rows_after_the_window_alone(stores: Any, database_url: str) -> None:
    """In a chat of 2,400 conversation rows, the start that extends a kept window reads
    (by EXPLAIN ANALYZE) the few rows of the turn since, not the window again."""
    a, _ = stores
    chat = _chat(database_url)
    chat_journal(database_url, chat.tenant, chat.sid, 600, agent_hash=H)
    chat.fence = 1
    big = Store(a.db)  # the default window: 2,000 rows
    _admit(big, chat.tenant, chat.sid, "first")
    started, _ = chat.start(big)
    chat.run(big, started, 3)
    _admit(big, chat.tenant, chat.sid, "second")
    kept = big.context.get(chat.tenant, chat.sid)
    assert kept is not None and len(kept.rows) == 2000
    params = {
        "tenant_id": chat.tenant,
        "session_id": chat.sid,
        "fence": chat.fence + 1,
        "claim": True,
        "agent_hashes": [H],
        "max_attempts": 9,
        "window_rows": big.turns.window_rows,
        "window_bytes": big.turns.window_bytes,
    }
    with psycopg.connect(_pg(database_url)) as conn:
        cold = explain_rows(conn, q("start_turn"), {**params, **NO_WINDOW})
        conn.rollback()
        warm = explain_rows(conn, q("start_turn"), {**params, **kept.since()})
        conn.rollback()
    assert cold >= 2000 and warm <= 40, (cold, warm)
    assert chat.start(big)[1]  # and it is warm, the window the same as read whole
