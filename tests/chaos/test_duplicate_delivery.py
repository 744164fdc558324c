"""A run_session message delivered twice: sent twice with send_task, and an identical
raw kombu message (same task id, same delivery tag) pushed again onto the broker's
list. Exactly one delivery runs the turn; the other finds the lease held ("busy")
or the lane idle ("idle"); the re-enqueue a busy one asks for finds it idle too.
Invariants hold."""

from __future__ import annotations

import re

import pytest

from tests.chaos.conftest import Chaos
from tests.procs import Proc, wait_for
from turnkeep.runtime.states import TurnState

OUTCOME = re.compile(r"Task turnkeep\.run_session\[([0-9a-f-]+)\] succeeded in [^:]+: '(\w+)'")
#: slow enough that two deliveries taken at once overlap
SLOW = {"TURNKEEP_DEMO_LATENCY": "0.3"}


def outcomes(workers: list[Proc]) -> list[tuple[str, str]]:
    """(task id, what run_session returned) of every finished delivery."""
    return [m.groups() for w in workers for m in OUTCOME.finditer(w.text())]  # type: ignore[misc]


def _one_runner(chaos: Chaos, sid: str, tid: str, workers: list[Proc], deliveries: int) -> None:
    turn = chaos.wait_terminal(sid, tid)
    assert turn.state is TurnState.COMPLETED, turn.error
    # the runner logs its outcome only after the lease release: wait for that line too
    wait_for(
        lambda: len(outcomes(workers)) >= deliveries and "ran" in {r for _, r in outcomes(workers)},
        60,
        what="every delivery finished",
    )
    wait_for(lambda: chaos.queued() == 0, 60, what="the queue drained")
    results = sorted(r for _, r in outcomes(workers))
    # a delivery turned away as busy leaves a rerun flag: the holder's release enqueues
    # the session once more, and that delivery (or a start-up scan's) finds it idle
    assert len(results) >= deliveries, results
    assert results.count("ran") == 1, results
    assert set(results) <= {"ran", "busy", "idle"}, results
    events = chaos.store.reads.turn_events(chaos.tenant, sid, tid)
    assert [e.type for e in events].count("turn.started") == 1
    assert turn.attempt == 1
    assert chaos.queued() == 0
    assert chaos.check() == []


@pytest.mark.chaos
def test_send_task_twice_runs_the_turn_once(chaos: Chaos, sid: str) -> None:
    tid = chaos.admit(sid, "steps=2", enqueue=False)
    chaos.client.enqueue(chaos.tenant, sid)
    chaos.client.enqueue(chaos.tenant, sid)
    assert chaos.redis.llen(chaos.queue_list) == 2
    workers = [chaos.procs.worker(SLOW), chaos.procs.worker(SLOW)]
    _one_runner(chaos, sid, tid, workers, deliveries=2)


@pytest.mark.chaos
@pytest.mark.parametrize("workers", [1, 2])
def test_identical_raw_message_republished_runs_the_turn_once(
    chaos: Chaos, sid: str, workers: int
) -> None:
    tid = chaos.admit(sid, "steps=2", enqueue=False)
    chaos.client.enqueue(chaos.tenant, sid)
    (raw,) = chaos.redis.lrange(chaos.queue_list, 0, -1)
    chaos.redis.lpush(chaos.queue_list, raw)  # byte for byte the same message, delivered again
    assert chaos.redis.lrange(chaos.queue_list, 0, -1) == [raw, raw]
    procs = [chaos.procs.worker(SLOW) for _ in range(workers)]
    _one_runner(chaos, sid, tid, procs, deliveries=2)
    # both deliveries of the raw message were the same task: the one that ran, and
    # its duplicate (other task ids are the re-enqueue a busy delivery asks for, or a
    # start-up scan's, and found the lease held or the lane idle)
    seen = outcomes(procs)
    (ran,) = [t for t, r in seen if r == "ran"]
    assert [t for t, _ in seen].count(ran) == 2, seen
    # both deliveries were acknowledged: nothing waits to be restored later
    wait_for(
        lambda: chaos.redis.hlen(chaos.broker_key("unacked")) == 0,
        60,
        what="no unacked message left",
    )
