"""The model that hunts the interactions (issue 37, DESIGN.md "Planes and the core"):
a seeded random walk through every plane's operations over the real API, supervised
workers (SIGKILLed now and then) and beat, with three tenants, checking global
invariants after each operation and, once everything drained, all of them.

Why a seeded generator and not hypothesis's ``RuleBasedStateMachine``: one example is
a world of real processes that takes seconds to start, and what it does depends on
the timing of workers, beat and kills, so the same rules do not replay the same run;
hypothesis's shrinking would re-run examples that differ for reasons it cannot see
(and flag the test as flaky). A printed seed replays the model's choices (the
operations, their arguments, the kills), which is what a reviewer needs; the timing
is the machine's.

``test_model_budget`` (in ``make test``): a fixed budget of operations.
``test_model_soak`` (``make soak SECONDS=3600``): as many as fit in that time.
Replay either with ``TURNKEEP_MODEL_SEED`` (tests/chaos/README.md).
"""

from __future__ import annotations

import os
import time

import pytest

from tests.chaos.conftest import Chaos, Supervisor
from tests.chaos.model import invariants
from tests.chaos.model.operations import step
from tests.chaos.model.world import Params, World
from tests.invariants import FenceWatcher

#: the bounded run: operations, and the most time they may take
BUDGET_STEPS = 90
BUDGET_SECONDS = 100.0


def run(chaos: Chaos, supervisor: Supervisor, steps: int, seconds: float) -> None:
    params = Params.from_env(steps, seconds)
    print(f"\nmodel: {params}", flush=True)
    w = World.start(chaos, supervisor, params)
    watcher = FenceWatcher(chaos.database_url).start()
    #: violation -> (step, operation) it was first seen after
    found: dict[str, tuple[int, str]] = {}
    started = time.monotonic()
    n = 0
    try:
        while n < params.steps and time.monotonic() - started < params.seconds:
            op = step(w)
            n += 1
            for v in invariants.cheap(w):
                found.setdefault(v, (n, op))
            time.sleep(w.rng.uniform(0.05, 0.4))
        # the end: every limit cleared (what item 1's queued turns wait for)
        for t in w.tenants:
            t.http.put("/v1/limits", json={"max_running": None})
        w.ops["clear_limits"] += len(w.tenants)
        for v in invariants.final(w):
            found.setdefault(v, (n, "final"))
        for v in watcher.stop():
            found.setdefault(f"[fences never go down; seed {params.seed}] {v}", (n, "final"))
    finally:
        w.close()
    [(turns,)] = w.sql(
        "SELECT count(*) FROM turns WHERE tenant_id = ANY(%s)", ([t.name for t in w.tenants],)
    )
    summary = (
        f"model: {params} steps={n} in {time.monotonic() - started:.0f}s turns={turns} "
        f"kills={w.kills} restarts={len(supervisor.restarts)}\n"
        f"  operations: {dict(sorted(w.ops.items()))}\n"
        f"  answers: {dict(sorted(w.refused.items()))}\n"
        f"  invariants checked: {dict(sorted(w.checks.items()))}"
    )
    print(summary, flush=True)
    firsts: dict[str, str] = {}
    for v, (at, op) in sorted(found.items(), key=lambda x: x[1][0]):
        kind = v.split(";")[0] + "]"
        firsts.setdefault(kind, f"step {at} after {op}: {v}")
    report = "\n".join(f"  first {k}: {x}" for k, x in firsts.items())
    assert not found, f"{len(found)} violations; {summary}\n{report}\nall:\n" + "\n".join(
        sorted(found)
    )


@pytest.mark.chaos
@pytest.mark.timeout(600)
def test_model_budget(chaos: Chaos, supervisor: Supervisor) -> None:
    run(chaos, supervisor, BUDGET_STEPS, BUDGET_SECONDS)


@pytest.mark.chaos
@pytest.mark.slow
@pytest.mark.soak
@pytest.mark.timeout(float(os.environ.get("TURNKEEP_MODEL_SECONDS") or 600) + 900)
def test_model_soak(chaos: Chaos, supervisor: Supervisor) -> None:
    run(chaos, supervisor, 10**9, 600.0)
