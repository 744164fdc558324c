"""SIGKILL of the worker around a session's prune statement (``prune_events``: the
oldest events, ``earliest_seq`` and the recorded tool steps of long-ended turns, in
one statement), then the prune run again by another worker:

``before_prune``  nothing of the session is deleted: not an event, not a tool step.
``after_prune``   the statement committed whole: a batch of events gone, ``earliest_seq``
                  past them, the old tool steps gone; never a part of it.

Either way the next runs bring the session down to what it must keep (the waiting
turn's events and tool steps, the recently ended turn's tool steps), the journal stays
a contiguous range and every invariant holds (docs/retention.md)."""

from __future__ import annotations

import signal

import psycopg
import pytest

from tests.chaos.conftest import Chaos, signalled
from tests.invariants import check_all
from tests.journals import long_journal
from tests.procs import wait_for
from turnkeep.runtime.names import TASK_PRUNE_JOURNAL
from turnkeep.runtime.obs.faults import FaultPoint

#: 750 turns of four events: 3,000 events; old-250 (accepted at seq 1001) still waits
TURNS, WAITING = 750, "old-250"
PRUNE = {
    "TURNKEEP_RETAIN_EVENTS": "1000",
    "TURNKEEP_RETENTION_BATCH": "400",
    "TURNKEEP_CONTEXT_WINDOW_ROWS": "50",
    "TURNKEEP_TOOL_STEPS_GRACE": "3600",
}
#: (turn, ended two days ago): old-700 ended just now, old-250 waits
STEPS = {"old-0": True, "old-100": True, WAITING: True, "old-700": False}


def _pg(url: str) -> str:
    return url.replace("postgresql+psycopg://", "postgresql://", 1)


def _world(database_url: str, tenant: str, sid: str) -> None:
    long_journal(database_url, tenant, sid, TURNS)
    with psycopg.connect(_pg(database_url), autocommit=True) as conn:
        conn.execute(
            "UPDATE turns SET state = 'waiting'"
            " WHERE tenant_id = %s AND session_id = %s AND turn_id = %s",
            (tenant, sid, WAITING),
        )
        for turn, old in STEPS.items():
            conn.execute(
                "INSERT INTO tool_steps (tenant_id, session_id, turn_id, step, name, result)"
                " VALUES (%s, %s, %s, 2, 'charge', '{\"id\": 1}')",
                (tenant, sid, turn),
            )
            if old:
                conn.execute(
                    "UPDATE turns SET updated_at = now() - interval '2 days'"
                    " WHERE tenant_id = %s AND session_id = %s AND turn_id = %s",
                    (tenant, sid, turn),
                )


def _state(database_url: str, tenant: str, sid: str) -> tuple[int, int, set[str]]:
    """(earliest_seq, events held, turns with a recorded tool step)."""
    with psycopg.connect(_pg(database_url)) as conn:
        row = conn.execute(
            "SELECT earliest_seq FROM sessions WHERE tenant_id = %s AND session_id = %s",
            (tenant, sid),
        ).fetchone()
        events = conn.execute(
            "SELECT count(*) FROM events WHERE tenant_id = %s AND session_id = %s",
            (tenant, sid),
        ).fetchone()
        steps = conn.execute(
            "SELECT turn_id FROM tool_steps WHERE tenant_id = %s AND session_id = %s",
            (tenant, sid),
        ).fetchall()
    assert row is not None and events is not None
    return int(row[0]), int(events[0]), {r[0] for r in steps}


@pytest.mark.chaos
@pytest.mark.parametrize("point", [FaultPoint.BEFORE_PRUNE, FaultPoint.AFTER_PRUNE])
def test_sigkill_around_the_prune_statement_deletes_all_of_a_batch_or_none(
    chaos: Chaos, sid: str, point: FaultPoint
) -> None:
    db, tenant = chaos.database_url, chaos.tenant
    _world(db, tenant, sid)
    victim = chaos.procs.worker(
        {**PRUNE, "TURNKEEP_FAULTS": f"{point.value}=kill-once", "TURNKEEP_FAULTS_SESSIONS": sid}
    )
    celery = chaos.client.celery
    celery.send_task(TASK_PRUNE_JOURNAL, queue=chaos.queue)
    wait_for(signalled(victim, signal.SIGKILL), 60, what=f"the worker SIGKILLed at {point}")

    everything = set(STEPS)
    if point is FaultPoint.BEFORE_PRUNE:
        assert _state(db, tenant, sid) == (1, 3000, everything)
    else:
        # the whole batch, earliest_seq past it, and the long-ended turns' steps
        assert _state(db, tenant, sid) == (401, 2600, {WAITING, "old-700"})

    chaos.procs.worker(PRUNE)
    kept = {WAITING, "old-700"}

    def pruned_to(earliest: int) -> bool:
        celery.send_task(TASK_PRUNE_JOURNAL, queue=chaos.queue)
        return _state(db, tenant, sid)[0] == earliest

    # held before the waiting turn (accepted at seq 1001) by the context window: the 50
    # conversation rows before it (two a turn) go back to turn 225's turn.accepted
    wait_for(lambda: pruned_to(901), 60, interval=1.0, what="the prune held at seq 901")
    again = chaos.store.retention.prune(
        tenant, sid, retain=1000, batch=400, window_rows=50, steps_grace=3600.0
    )
    assert (again.deleted, again.steps_deleted) == (0, 0)
    assert _state(db, tenant, sid) == (901, 2100, kept)
    bad = check_all(db, tenants=[tenant], require_settled=False, effects_table=False)
    assert bad == [], bad
