"""50 concurrent identical admissions (same Idempotency-Key, same body) over the real
API, a uvicorn subprocess, while workers run: one turn row, one turn.accepted, one
202 and 49 replays of the same turn, and exactly one run however many run_session
messages the replays enqueued."""

from __future__ import annotations

import threading

import httpx
import pytest

from tests.chaos.conftest import Chaos, turn_body
from tests.chaos.test_duplicate_delivery import outcomes
from tests.procs import wait_for
from turnkeep.runtime.states import TurnState

N = 50


@pytest.mark.chaos
def test_fifty_concurrent_identical_admissions_one_turn_one_run(chaos: Chaos, sid: str) -> None:
    workers = [chaos.procs.worker({"TURNKEEP_DEMO_LATENCY": "0.2"}) for _ in range(2)]
    api = chaos.api()
    key = "same-turn"
    barrier = threading.Barrier(N)
    answers: list[httpx.Response | BaseException] = [RuntimeError("not run")] * N
    limits = httpx.Limits(max_connections=N, max_keepalive_connections=N)
    with httpx.Client(base_url=api.url, headers=api.headers, timeout=60, limits=limits) as c:

        def one(i: int) -> None:
            try:
                barrier.wait(20)
                answers[i] = c.post(
                    f"/v1/sessions/{sid}/turns",
                    json=turn_body("steps=2"),
                    headers={"Idempotency-Key": key},
                )
            except BaseException as exc:
                answers[i] = exc

        threads = [threading.Thread(target=one, args=(i,)) for i in range(N)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(90)
    assert all(isinstance(a, httpx.Response) for a in answers), answers
    codes = sorted(a.status_code for a in answers)  # type: ignore[union-attr]
    assert codes == [200] * (N - 1) + [202], codes
    bodies = [a.json() for a in answers]  # type: ignore[union-attr]
    assert {(b["turn_id"], b["accepted_seq"], b["created_at"]) for b in bodies} == {
        (key, 1, bodies[0]["created_at"])
    }
    chaos.accepted.append((chaos.tenant, sid, key))
    assert [t.turn_id for t in chaos.store.reads.list_turns(chaos.tenant, sid)] == [key]

    turn = chaos.wait_terminal(sid, key)
    assert turn.state is TurnState.COMPLETED, turn.error
    assert turn.attempt == 1
    types = [e.type for e in chaos.store.reads.turn_events(chaos.tenant, sid, key)]
    assert types.count("turn.accepted") == 1 and types.count("turn.started") == 1
    # every answer enqueued run_session; all but one delivery found nothing to do
    enqueued = sum(b["state"] not in ("completed", "failed", "cancelled") for b in bodies)
    wait_for(
        lambda: len(outcomes(workers)) >= enqueued and chaos.queued() == 0,
        60,
        what="every delivery handled",
    )
    results = [r for _, r in outcomes(workers)]
    assert results.count("ran") == 1, results
    assert set(results) <= {"ran", "busy", "idle"}, results
    assert chaos.check() == []
