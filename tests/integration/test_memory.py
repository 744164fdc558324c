"""Durable memory on real Postgres and a real worker (docs/memory.md).

The store's statements (``remember_fact`` once per writing call, ``recall_facts``
newest first, bounded and cut at the turn's admission, another tenant seeing nothing)
and the worker's writer and recall run now. The worker-level tests need
``AgentDefinition.memory`` and the executor's wiring (the memory tools given to the
turn's agent, the recall message put into its requests): they run once the field
exists (``WIRED``), and then fail if the executor is not wired."""

from __future__ import annotations

import dataclasses
import json
import signal
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg
import pytest

from tests.invariants import check_all
from tests.procs import wait_for
from turnkeep.runtime import journal
from turnkeep.runtime.agents.tools import ToolContext
from turnkeep.runtime.memory import RECALL_HEADER, MemoryScope
from turnkeep.runtime.obs.faults import FaultPoint
from turnkeep.runtime.obs.redact import Redactor
from turnkeep.runtime.plan import idempotency_key
from turnkeep.runtime.states import TurnState
from turnkeep.store.sql import q
from turnkeep.worker import memory as wmemory

FAR = datetime(2999, 1, 1, tzinfo=UTC)
FACT = "the user's cat is Tom"


@pytest.fixture
def turn(client, tenant, sid) -> str:
    """An admitted turn (not enqueued) by ``alice``: its session is the facts' source."""
    return client.admit(tenant, sid, "rememberer", "go", enqueue=False, subject="alice")


def _ctx(tenant: str, sid: str, tid: str, step: int = 2) -> ToolContext:
    return ToolContext(
        tenant_id=tenant,
        session_id=sid,
        turn_id=tid,
        step_number=step,
        idempotency_key=idempotency_key(tenant, sid, tid, step),
        deadline=time.monotonic() + 30,
        cancelled=lambda: False,
    )


# -- the store's statements ----------------------------------------------------------


def test_a_fact_is_written_once_per_call(store, tenant, sid, turn):
    source = f"{tenant}/{sid}/{turn}/2"
    assert store.memory.remember_fact(
        tenant, "subject:alice", source, "a", session_id=sid, turn_id=turn
    )
    again = store.memory.remember_fact(
        tenant, "subject:alice", source, "b", session_id=sid, turn_id=turn
    )
    assert again is False
    (row,) = store.memory.recall_facts(tenant, "subject:alice", before=FAR, limit=10)
    assert (row.fact, row.source_key, row.session_id, row.turn_id) == ("a", source, sid, turn)
    # the same call under another scope key is another fact
    assert store.memory.remember_fact(
        tenant, "project:p", source, "c", session_id=sid, turn_id=turn
    )


def test_recall_is_newest_first_bounded_and_cut_at_a_time(store, tenant, sid, turn):
    for step in range(2, 7):
        source = f"{tenant}/{sid}/{turn}/{step}"
        store.memory.remember_fact(
            tenant, "subject:alice", source, f"f{step}", session_id=sid, turn_id=turn
        )
        time.sleep(0.01)  # (each statement's now() is its own)
    rows = store.memory.recall_facts(tenant, "subject:alice", before=FAR, limit=3)
    assert [r.fact for r in rows] == ["f6", "f5", "f4"]
    cut = rows[1].created_at
    assert [
        r.fact for r in store.memory.recall_facts(tenant, "subject:alice", before=cut, limit=9)
    ] == [
        "f4",
        "f3",
        "f2",
    ]
    assert store.memory.recall_facts(tenant, "subject:bob", before=FAR, limit=9) == []


def test_another_tenant_sees_no_fact(store, tenant, sid, turn):
    store.memory.remember_fact(
        tenant, "subject:alice", f"{tenant}/{sid}/{turn}/2", "x", session_id=sid, turn_id=turn
    )
    assert store.memory.recall_facts("someone-else", "subject:alice", before=FAR, limit=9) == []
    params = {"tenant_id": tenant, "scope_key": "subject:alice", "before": FAR, "limit": 9}
    # as if the statement had been run for another tenant: row-level security answers
    assert store.db.rows(q("recall_facts"), params, tenant="someone-else") == []
    assert len(store.db.rows(q("recall_facts"), params, tenant=tenant)) == 1


def test_the_table_refuses_an_empty_or_too_long_fact(store, tenant, sid, turn):
    for i, fact in enumerate(("", "x" * 2001)):
        with pytest.raises(psycopg.errors.CheckViolation):
            store.memory.remember_fact(
                tenant, "subject:alice", f"k{i}", fact, session_id=sid, turn_id=turn
            )


# -- the worker's writer and recall, on the real store -------------------------------


def test_the_writer_keys_by_subject_and_another_subject_recalls_nothing(
    client, store, tenant, sid, turn
):
    redactor = Redactor(["sk-live-abcdef0123"])
    ctx = _ctx(tenant, sid, turn)
    fact = f"{FACT}; key sk-live-abcdef0123"
    done = wmemory.write(store, redactor, MemoryScope.SUBJECT, ctx, fact)
    assert done == {"remembered": f"{FACT}; key [REDACTED]"}
    # the rerun of the call (same idempotency key) writes no second row
    assert wmemory.write(store, redactor, MemoryScope.SUBJECT, ctx, fact) == done
    assert len(store.memory.recall_facts(tenant, "subject:alice", before=FAR, limit=9)) == 1

    later = client.admit(tenant, sid + "-b", "rememberer", "hi", enqueue=False, subject="alice")
    later_turn = store.reads.get_turn(tenant, sid + "-b", later)
    (recalled,) = wmemory.recall(store, MemoryScope.SUBJECT, later_turn)
    assert (recalled["fact"], recalled["session_id"], recalled["turn_id"]) == (
        f"{FACT}; key [REDACTED]",
        sid,
        turn,
    )
    other = client.admit(tenant, sid + "-c", "rememberer", "hi", enqueue=False, subject="bob")
    assert (
        wmemory.recall(store, MemoryScope.SUBJECT, store.reads.get_turn(tenant, sid + "-c", other))
        == []
    )
    # the writing turn itself was admitted before its fact: it does not recall it
    assert wmemory.recall(store, MemoryScope.SUBJECT, store.reads.get_turn(tenant, sid, turn)) == []


def test_a_project_scope_without_a_project_writes_nothing(store, tenant, sid, turn):
    with pytest.raises(wmemory.NoMemoryScope):
        wmemory.write(store, Redactor(), MemoryScope.PROJECT, _ctx(tenant, sid, turn), FACT)
    assert store.memory.recall_facts(tenant, "project:", before=FAR, limit=9) == []


# -- a real worker (after the executor's wiring) -------------------------------------


def _answer(turn: object) -> dict[str, list[str]]:
    return json.loads(turn.result["text"])  # type: ignore[attr-defined]


def test_a_fact_remembered_in_one_session_is_recalled_in_another_of_the_subject_only(
    procs, client, store, tenant, sid, database_url
):
    procs.worker()
    tid = client.admit(tenant, sid, "rememberer", "please remember my cat", subject="alice")
    done = client.wait_terminal(tenant, sid, tid, timeout=30)
    assert done.state is TurnState.COMPLETED, done.error
    assert _answer(done)["notes"] == []
    assert json.loads(_answer(done)["results"][0]) == {"remembered": FACT}
    (row,) = store.memory.recall_facts(tenant, "subject:alice", before=FAR, limit=9)
    assert (row.fact, row.source_key) == (FACT, f"{tenant}/{sid}/{tid}/2")

    # a later turn of the same subject, in another session, is shown it with its source
    other_sid = sid + "-2"
    later = client.admit(tenant, other_sid, "rememberer", "what is my cat?", subject="alice")
    seen = client.wait_terminal(tenant, other_sid, later, timeout=30)
    assert seen.state is TurnState.COMPLETED, seen.error
    (note,) = _answer(seen)["notes"]
    day = row.created_at.astimezone(UTC).date().isoformat()
    assert note == f"{RECALL_HEADER}\n- [{sid}/{tid} {day}] {FACT}"
    # recalled into the request only: no message of the journal's transcript is the
    # notes (the demo model's own answer quotes them, which is its business)
    shown = [m for _, m in journal.messages(store.reads.turn_events(tenant, other_sid, later))]
    assert shown and not any(str(m["content"]).startswith(RECALL_HEADER) for m in shown)

    # another subject is shown nothing
    bobs = sid + "-3"
    bob = client.admit(tenant, bobs, "rememberer", "what is my cat?", subject="bob")
    unseen = client.wait_terminal(tenant, bobs, bob, timeout=30)
    assert unseen.state is TurnState.COMPLETED, unseen.error
    assert _answer(unseen)["notes"] == []
    accepted = [(tenant, sid, tid), (tenant, other_sid, later), (tenant, bobs, bob)]
    # (no effects table: remember's effect is its row, counted above)
    assert check_all(database_url, tenants=[tenant], accepted=accepted, effects_table=False) == []


def test_a_rerun_after_a_crash_writes_one_row(procs, client, store, tenant, sid, database_url):
    point = FaultPoint.AFTER_TOOL_EFFECT
    procs.beat()
    victim = procs.worker({"TURNKEEP_FAULTS": f"{point.value}=kill-once"})
    tid = client.admit(tenant, sid, "rememberer", "please remember my cat", subject="alice")
    wait_for(lambda: victim.popen.poll() == -signal.SIGKILL, 30, what="worker SIGKILLed")
    assert (Path(procs.env["TURNKEEP_FAULTS_DIR"]) / f"{point.value}.fired").exists()
    # the fact was written, its call's outcome was not committed
    assert len(store.memory.recall_facts(tenant, "subject:alice", before=FAR, limit=9)) == 1

    procs.worker()
    done = client.wait_terminal(tenant, sid, tid, timeout=60)
    assert done.state is TurnState.COMPLETED, done.error
    assert done.attempt == 2
    (row,) = store.memory.recall_facts(tenant, "subject:alice", before=FAR, limit=9)
    assert (row.fact, row.source_key) == (FACT, f"{tenant}/{sid}/{tid}/2")
    completed = [e for e in store.reads.turn_events(tenant, sid, tid) if e.type == "tool.completed"]
    assert len(completed) == 1
    accepted = [(tenant, sid, tid)]
    assert check_all(database_url, tenants=[tenant], accepted=accepted, effects_table=False) == []


def test_recall_reads_nothing_remembered_after_the_turn_was_admitted(
    store, client, tenant, sid, turn
):
    # every attempt of a turn is shown the same notes, whatever was remembered since
    t = store.reads.get_turn(tenant, sid, turn)
    store.memory.remember_fact(
        tenant, "subject:alice", f"{tenant}/{sid}/{turn}/2", FACT, session_id=sid, turn_id=turn
    )
    assert wmemory.recall(store, MemoryScope.SUBJECT, t) == []
    moved = dataclasses.replace(t, created_at=t.created_at + timedelta(days=1))
    assert [f["fact"] for f in wmemory.recall(store, MemoryScope.SUBJECT, moved)] == [FACT]
