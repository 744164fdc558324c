"""SIGKILL of the worker at each point of a delegation (tests/agents.py ``manager``
handing three tasks to ``helper``), then recovery by another worker and beat:

``before_child_admit``  the parent's step is about to admit its first child: the
                        rerun admits all three (the same derived ids)
``while_children_run``  the worker dies inside a child's tool call: the child's lane
                        is taken over, its idempotent effect still counts once
``after_settle``        a child's terminal commit landed, its parent was not told:
                        the last child, or the recovery scan, answers the parent
``before_join``         every child ended and the parent resumed: its join (the
                        call's outcome) is not committed; the rerun commits it once

Each ends with exactly three children, one answer to the parent's delegation request,
one join in task order, and every invariant holding."""

from __future__ import annotations

import json
import signal

import psycopg
import pytest

from tests.chaos.conftest import Chaos, signalled
from tests.procs import wait_for
from turnkeep.runtime.states import TurnState

TASKS = ["a", "b", "c"]


def _children(chaos: Chaos) -> list[tuple[str, str, str]]:
    with psycopg.connect(chaos.database_url.replace("+psycopg", "")) as conn:
        rows = conn.execute(
            "SELECT session_id, turn_id, input -> 'delegation' -> 'parent' ->> 'task_id'"
            " FROM turns WHERE tenant_id = %s AND turn_id LIKE 'dlg-%%' ORDER BY ordinal",
            (chaos.tenant,),
        ).fetchall()
    return [(str(r[0]), str(r[1]), str(r[2])) for r in rows]


def _child_calls(chaos: Chaos) -> list[str]:
    with psycopg.connect(chaos.database_url.replace("+psycopg", "")) as conn:
        rows = conn.execute(
            "SELECT key FROM test_tool_calls WHERE key LIKE %s ORDER BY at",
            (f"{chaos.tenant}/dlg-%",),
        ).fetchall()
    return [str(r[0]) for r in rows]


@pytest.mark.chaos
@pytest.mark.parametrize(
    "point", ["before_child_admit", "while_children_run", "after_settle", "before_join"]
)
def test_sigkill_during_a_delegation_ends_with_three_children_and_one_join(
    chaos: Chaos, sid: str, point: str
) -> None:
    chaos.procs.beat()
    if point == "while_children_run":
        victim = chaos.procs.worker({"TURNKEEP_TEST_TOOL_SLEEP": "3"})
    else:
        victim = chaos.procs.worker({"TURNKEEP_FAULTS": f"{point}=kill-once"})
    tid = chaos.admit(sid, "tasks=" + ",".join(TASKS), agent="manager")
    if point == "while_children_run":
        wait_for(lambda: _child_calls(chaos), 30, what="a child's tool call started")
        victim.signal(signal.SIGKILL)
    wait_for(signalled(victim, signal.SIGKILL), 30, what=f"worker SIGKILLed at {point}")

    chaos.procs.worker()
    chaos.procs.worker()
    turn = chaos.wait_terminal(sid, tid, timeout=90)

    assert turn.state is TurnState.COMPLETED, turn.error
    children = _children(chaos)
    assert [c[2] for c in children] == TASKS, children
    for child_sid, child_tid, _ in children:
        assert chaos.store.reads.get_turn(chaos.tenant, child_sid, child_tid).state is (
            TurnState.COMPLETED
        )
    events = chaos.store.reads.turn_events(chaos.tenant, sid, tid)
    assert [e.data["kind"] for e in events if e.type == "input.requested"] == ["delegation"]
    assert len([e for e in events if e.type == "input.resolved"]) == 1
    joins = [e for e in events if e.type == "tool.completed"]
    assert len(joins) == 1
    joined = json.loads(joins[0].data["message"]["content"])
    assert [r["id"] for r in joined["results"]] == TASKS
    # each child's idempotent effect counted once, however often its tool ran
    with psycopg.connect(chaos.database_url.replace("+psycopg", "")) as conn:
        effects = conn.execute(
            "SELECT count(*) FROM test_tool_effects WHERE key LIKE %s",
            (f"{chaos.tenant}/dlg-%",),
        ).fetchone()
    assert effects == (len(TASKS),)
    chaos.accepted += [(chaos.tenant, c[0], c[1]) for c in children]
    assert chaos.check() == []
