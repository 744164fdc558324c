"""The prefork pool: the process that runs a task is a child of the worker's main
process. SIGKILL of the child during a slow tool call, and separately of the main
process: the turn completes, the tool's effect counts once, invariants hold."""

from __future__ import annotations

import os
import signal

import pytest

from tests.chaos.conftest import Chaos
from tests.chaos.test_kill_points import tool_calls
from tests.procs import children, proc_state, wait_for
from turnkeep.runtime.states import TurnState

SLOW = {"TURNKEEP_TEST_TOOL_SLEEP": "3"}


def _running_child(chaos: Chaos, main_pid: int, key: str) -> int:
    """The pool child that runs the tool call ``key`` (the tool logs its pid)."""
    pids = wait_for(lambda: tool_calls(chaos.database_url, key), 30, what="tool call started")
    child = pids[0]  # type: ignore[index]
    assert child in children(main_pid), (child, children(main_pid))
    return int(child)


@pytest.mark.chaos
def test_prefork_sigkill_of_the_child_running_the_turn(chaos: Chaos, sid: str) -> None:
    chaos.procs.beat()
    main = chaos.procs.worker(SLOW, pool="prefork", concurrency=2)
    tid = chaos.admit(sid, "steps=2")
    key = f"{chaos.tenant}/{sid}/{tid}/2"
    child = _running_child(chaos, main.pid, key)
    os.kill(child, signal.SIGKILL)
    turn = chaos.wait_terminal(sid, tid, timeout=90)
    assert turn.state is TurnState.COMPLETED, turn.error
    assert main.alive()  # the pool replaced its child; the main process never died
    pids = tool_calls(chaos.database_url, key)
    assert len(pids) == 2 and pids[0] == child != pids[1], pids
    assert child not in children(main.pid)
    assert turn.attempt == 2
    assert chaos.check() == []


@pytest.mark.chaos
def test_prefork_sigkill_of_the_main_process(chaos: Chaos, sid: str) -> None:
    chaos.procs.beat()
    main = chaos.procs.worker(SLOW, pool="prefork", concurrency=2)
    tid = chaos.admit(sid, "steps=2")
    key = f"{chaos.tenant}/{sid}/{tid}/2"
    child = _running_child(chaos, main.pid, key)
    main.signal(signal.SIGKILL)
    wait_for(lambda: not main.alive(), 60, what="main process gone")
    # the pool child dies with its parent (billiard's pdeathsig): no orphan runs on
    wait_for(lambda: proc_state(child) in ("", "Z"), 60, what="orphaned pool child gone")
    healthy = chaos.procs.worker()
    turn = chaos.wait_terminal(sid, tid, timeout=90)
    assert turn.state is TurnState.COMPLETED, turn.error
    assert turn.attempt == 2
    assert tool_calls(chaos.database_url, key) == [child, healthy.pid]
    assert chaos.check() == []


@pytest.mark.chaos
def test_prefork_children_forked_after_startup_run_many_turns(chaos: Chaos) -> None:
    """Regression: the worker's resources (engine, pool) was built once per process image,
    so pool children forked after the main process had used it (its start-up scan)
    inherited its pooled Postgres connection: two children on one socket read each
    other's results ("D message without prior row description", "prepared statement
    already exists", rows of other queries, lease lost for nothing). Replace both
    children after start-up, then run sessions in both at once."""
    main = chaos.procs.worker({"TURNKEEP_TEST_TOOL_SLEEP": "0.1"}, pool="prefork", concurrency=2)
    for old in children(main.pid):
        os.kill(old, signal.SIGKILL)
        wait_for(
            lambda o=old: o not in children(main.pid) and len(children(main.pid)) == 2,
            30,
            what="the pool replaced a child",
        )
    sids = [f"s-fork-{i}" for i in range(6)]
    tids = [chaos.admit(sid, "steps=3") for sid in sids]
    chaos.wait_all_terminal(timeout=90)
    for sid, tid in zip(sids, tids, strict=True):
        turn = chaos.store.reads.get_turn(chaos.tenant, sid, tid)
        assert turn.state is TurnState.COMPLETED and turn.attempt == 1, turn
    log = main.text()
    assert "raised unexpected" not in log, log[-3000:]
    assert chaos.check() == []
