"""SIGKILL of the eraser around telling the waiters of a session that has gone
(worker/waiters.py): a parent (``manager``, one task) parks on its child, the child's
session passes its TTL, and beat's erasure sweep sends its erasure to a worker armed
at

``before_waiters_told``  the tombstone is there, the parent was not told: the recovery
                         scan (the fallback, ``scan_delegations`` counts a tombstoned
                         child as ended) or the erasure sent again tells it
``after_waiters_told``   the parent was answered, nothing of the child erased: the
                         answer stands, given once; the sweep finishes the erasure

Either way the parent completes with its child ``child_deleted``, answered once and
joined once, the child's session ends erased, and every invariant holds."""

from __future__ import annotations

import json
import signal

import psycopg
import pytest

from tests.chaos.conftest import Chaos, signalled
from tests.procs import wait_for
from turnkeep.runtime.obs.faults import WAITERS_POINTS
from turnkeep.runtime.states import TurnState

FAST = {
    "TURNKEEP_ERASURE_INTERVAL": "0.5",
    "TURNKEEP_ERASURE_GRACE": "1",
}


def _pg(url: str) -> str:
    return url.replace("postgresql+psycopg://", "postgresql://", 1)


def _child_session(chaos: Chaos, sid: str) -> str | None:
    with psycopg.connect(_pg(chaos.database_url)) as conn:
        row = conn.execute(
            "SELECT session_id FROM turns WHERE tenant_id = %s"
            " AND input -> 'delegation' -> 'parent' ->> 'session_id' = %s",
            (chaos.tenant, sid),
        ).fetchone()
    return None if row is None else str(row[0])


@pytest.mark.chaos
@pytest.mark.parametrize("point", sorted(p.value for p in WAITERS_POINTS))
def test_sigkill_around_telling_the_waiters_still_settles_the_parent_once(
    chaos: Chaos, sid: str, point: str
) -> None:
    victim = chaos.procs.worker(
        {
            **FAST,
            "TURNKEEP_TEST_TOOL_SLEEP": "30",
            "TURNKEEP_FAULTS": f"{point}=kill-once",
            "TURNKEEP_FAULTS_SESSIONS": "dlg-",
        }
    )
    tid = chaos.admit(sid, "tasks=a", agent="manager")
    wait_for(
        lambda: chaos.store.reads.get_turn(chaos.tenant, sid, tid).state is TurnState.WAITING,
        60,
        what="the parent parked on its child",
    )
    child = _child_session(chaos, sid)
    assert child is not None
    with psycopg.connect(_pg(chaos.database_url), autocommit=True) as conn:
        conn.execute(
            "UPDATE sessions SET expires_after = 1, expires_at = now()"
            " WHERE tenant_id = %s AND session_id = %s",
            (chaos.tenant, child),
        )
    chaos.procs.beat(FAST)
    wait_for(signalled(victim, signal.SIGKILL), 60, what=f"the eraser SIGKILLed at {point}")
    gone = chaos.store.reads.get_tombstone(chaos.tenant, child)
    assert gone is not None and not gone.erased
    if point == "after_waiters_told":  # answered before the kill (and perhaps resumed)
        events = chaos.store.reads.turn_events(chaos.tenant, sid, tid)
        assert [e.data["by"] for e in events if e.type == "input.resolved"] == ["runtime"]

    chaos.procs.worker(FAST)
    turn = chaos.wait_terminal(sid, tid, timeout=90)
    assert turn.state is TurnState.COMPLETED, turn.error
    events = chaos.store.reads.turn_events(chaos.tenant, sid, tid)
    assert len([e for e in events if e.type == "input.resolved"]) == 1
    [join] = [e for e in events if e.type == "tool.completed"]
    [result] = json.loads(join.data["message"]["content"])["results"]
    assert result["id"] == "a" and result["error"]["code"] == "child_deleted"
    wait_for(
        lambda: (
            (g := chaos.store.reads.get_tombstone(chaos.tenant, child)) is not None and g.erased
        ),
        60,
        what="the child's session erased",
    )
    assert chaos.check() == []
