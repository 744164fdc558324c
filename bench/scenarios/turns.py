"""End-to-end turns on 1 worker x c16 with the zero-latency demo model (a turn is a
model call, a tool call and a model call). One drain of N pre-admitted turns gives:

* ``worker_statements_per_turn``: the bench database's ``xact_commit +
  xact_rollback`` delta over the drain / N. Every worker statement runs in
  autocommit, so each is one server transaction; nothing is subtracted, so nothing
  else may touch the database in the window. It opens with the worker warm and idle
  for over 10 s (a live backend may hold its counts back that long) and no bench
  connection to the database; it closes after the worker exited (its backends flush
  on exit). The drain's end is told by Celery task events, never by polling.
* ``worker_cpu_ms_per_turn``: the worker's utime+stime from the release to the N-th
  ``task-succeeded`` event / N;
* ``turns_per_s_1w``: N / the same window;
* ``steps_per_turn``: checkpointed steps (events with a step) / N, read afterwards.

Before it, on the same worker: single turns one at a time (admission -> terminal
latency), two warm-up drains of N turns and, with ``--py-spy``, a profiled drain of its
own.
"""

from __future__ import annotations

import resource
import time
from typing import Any

from bench import pyspy
from bench.context import RESULTS, Run
from bench.events import TaskLog
from bench.harness import (
    PGSTAT_IDLE_INTERVAL,
    Proc,
    freeze_for_counting,
    server_transactions,
    settled_stats,
    summary_ms,
    system_cpu,
)
from turnkeep.runtime.names import QUEUE, TASK_RUN_SESSION


def self_cpu() -> float:
    u = resource.getrusage(resource.RUSAGE_SELF)
    return u.ru_utime + u.ru_stime


def single_turns(r: Run, n: int) -> dict[str, Any]:
    """One turn at a time on the idle worker: admission to terminal, as polled."""
    t, lat = r.tenant("single"), []
    for i in range(n):
        t0 = time.perf_counter()
        r.c.admit(t, r.c.session(i), n=i)
        if not r.c.wait_turn(t, r.c.session(i)):
            raise RuntimeError("a single turn did not finish in 30 s")
        lat.append(time.perf_counter() - t0)
    return summary_ms(lat)


def drain(r: Run, name: str, n: int, on_release: Any = None) -> None:
    """Admit ``n`` turns, queue them while the worker consumes nothing, release them at
    once and poll until all are terminal: the measured drain's shape, unmeasured (a
    warm-up: the worker opens the connections and prepares the statements such a
    drain needs, so the measured one sees the steady state)."""
    t = r.tenant(name)
    r.c.admit_many(t, n, enqueue=False)
    r.c.consume(QUEUE, 1, on=False)
    r.c.enqueue_many(t, n)
    if on_release is not None:
        on_release()
    r.c.consume(QUEUE, 1, on=True)
    if not r.c.wait_terminal(t, n, timeout=60 + 2 * n, interval=0.1):
        raise RuntimeError(f"{name}: not all {n} turns ended in time")


def profiled_drain(r: Run, w: Proc, n: int) -> dict[str, Any] | None:
    """A drain under ``py-spy record`` (never the measured one: the profiler takes CPU
    from the same two cores)."""
    if not pyspy.available():
        print("   py-spy is not installed in the venv: no profile", flush=True)
        return None
    recs: list[pyspy.Recording] = []
    out = RESULTS / f"pyspy-turns-{r.stamp}.txt"
    drain(r, "pyspy", n, on_release=lambda: recs.append(pyspy.Recording(w.pid, out)))
    return recs[0].stop()


def measured_drain(r: Run, w: Proc, n: int, last_activity: float) -> dict[str, Any]:
    c, t = r.c, r.tenant("drain")
    c.admit_many(t, n, enqueue=False)
    frozen = freeze_for_counting(r.env.pg_url)
    c.disconnect()
    polls = c.polls
    time.sleep(max(0.0, last_activity + PGSTAT_IDLE_INTERVAL + 1.0 - time.monotonic()))
    before = settled_stats(r.env.dbname, quiet=0.5)
    # -- the window: only the worker talks to the bench database from here --------------
    c.consume(QUEUE, 1, on=False)
    c.enqueue_many(t, n)
    with TaskLog(w, TASK_RUN_SESSION) as events:
        events.reset(n, w.pid)
        sys0, me0 = system_cpu(), self_cpu()
        cpu0, t0 = w.cpu(), time.time()
        c.consume(QUEUE, 1, on=True)
        ok = events.wait(n, timeout=60 + 2 * n)
        sys1, me1 = system_cpu(), self_cpu()
    r.env.stop(w)  # its backends exit, and flush their counts
    after = settled_stats(r.env.dbname, quiet=1.0)
    # -- the window closed ----------------------------------------------------------------
    assert c.polls == polls, "the bench touched the database in the window"
    if not ok or events.at_target is None:
        raise RuntimeError(f"only {events.done} of {n} turns' tasks ended in time")
    end, cpu1 = events.at_target
    wall = end - t0
    out = c.outcome(t)
    delta = {k: after[k] - before[k] for k in after}
    r.figures["worker_statements_per_turn"] = (
        server_transactions(after) - server_transactions(before)
    ) / n
    r.figures["worker_cpu_ms_per_turn"] = 1000.0 * (cpu1 - cpu0) / n
    r.figures["turns_per_s_1w"] = n / wall
    r.figures["steps_per_turn"] = out["steps"] / n
    machine = (sys1[0] - sys0[0]) / max(1e-9, sys1[1] - sys0[1])
    # CPU the rest of the machine used meanwhile: Postgres, Redis, and anyone else's
    # processes (a busy machine makes every figure of the drain worse)
    others = (sys1[0] - sys0[0]) - (cpu1 - cpu0) - (me1 - me0)
    return {
        "turns": n,
        "states": out["states"],
        "all_completed": out["states"].get("completed", 0) == n,
        "task_events_failed": events.failed,
        "seconds": wall,
        "worker_cpu_s": cpu1 - cpu0,
        "bench_cpu_s": me1 - me0,
        "machine_cpu_busy_fraction": machine,
        "others_cpu_s": others,
        "pg_stat_database_delta": delta,
        "backend_startups_per_turn": delta["sessions"] / n,
        "events_per_turn": out["events"] / n,
        "turn_latency": out["turn_latency"],
        "database": frozen,
    }


def run(r: Run) -> dict[str, Any]:
    plan = r.plan
    w, pool = r.start_turn_worker(concurrency=plan.concurrency, latency=0.0, name="turns")
    try:
        out: dict[str, Any] = {"concurrency": plan.concurrency, "pool": pool}
        out["single_turn_latency"] = single_turns(r, plan.single_turns)
        r.figures["single_turn_p50_ms"] = out["single_turn_latency"]["p50_ms"]
        # two warm-up drains: with a LIFO pool the deeper connections see few uses
        # per drain, and psycopg prepares a statement on its 6th use on a connection
        drain(r, "warm1", plan.turns)
        drain(r, "warm2", plan.turns)
        if r.args.py_spy:
            out["pyspy"] = profiled_drain(r, w, plan.turns)
        out["drain"] = measured_drain(r, w, plan.turns, time.monotonic())
    finally:
        r.env.stop(w)
    return out
