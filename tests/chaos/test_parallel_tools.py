"""SIGKILL of the worker between two commits of a batch of parallel tool calls (issue
25): the next worker runs only the calls whose outcome was not committed, under their
own idempotency keys, and each idempotent effect is counted once."""

from __future__ import annotations

import signal

import psycopg
import pytest

from tests.chaos.conftest import Chaos, signalled
from tests.procs import wait_for
from turnkeep.runtime.states import TurnState


def _calls(chaos: Chaos, tid: str) -> list[str]:
    with psycopg.connect(chaos.database_url.replace("+psycopg", "")) as conn:
        rows = conn.execute(
            "SELECT key FROM test_tool_calls WHERE key LIKE %s ORDER BY at", (f"%/{tid}/%",)
        ).fetchall()
    return [str(r[0]) for r in rows]


@pytest.mark.chaos
def test_sigkill_between_a_batchs_commits_reruns_only_the_uncommitted(
    chaos: Chaos, sid: str
) -> None:
    chaos.procs.beat()
    victim = chaos.procs.worker(
        {"TURNKEEP_FAULTS": "between_batch_commits=kill-once", "TURNKEEP_FAULTS_SESSIONS": sid}
    )
    tid = chaos.admit(sid, "go", agent="trio")
    wait_for(signalled(victim, signal.SIGKILL), 30, what="worker SIGKILLed between commits")
    committed = [
        e.step
        for e in chaos.store.reads.turn_events(chaos.tenant, sid, tid)
        if e.type == "tool.completed"
    ]
    assert committed == [2]  # the first outcome landed, the other two did not
    before = _calls(chaos, tid)
    assert len(before) == 3  # all three ran side by side

    chaos.procs.worker()
    turn = chaos.wait_terminal(sid, tid, timeout=60)
    assert turn.state is TurnState.COMPLETED, turn.error
    after = _calls(chaos, tid)[3:]
    first_key = next(k for k in before if k.endswith("/2"))
    assert sorted(after) == sorted(k for k in before if k != first_key)
    steps = [e.step for e in chaos.store.reads.turn_events(chaos.tenant, sid, tid) if e.step]
    assert steps == [1, 2, 3, 4, 5]
    assert not chaos.check()  # includes: each idempotent effect applied once
