"""The Celery ceiling: bench/noop_app.py, a Celery app with worker.app's settings
(acks_late, prefetch 1, threads pool, task events, ...) and a task that does one
Redis round trip, on the same broker, 1 worker x c16.

* round trip, one task at a time: publish -> the task ran (``noop_round_trip_p50_ms``);
* drain: N tasks queued while the worker consumes nothing, then released at once;
  ``noop_tasks_per_s_1w`` from the release to the last task's end (the time the N-th
  task wrote, by the same clock), ``noop_cpu_ms_per_task`` the worker's CPU over the
  window / N, read once the counter says all N ran (the worker is idle by then).

Why the counter and not the ``task-succeeded`` events the turns scenario counts: 4,000
tasks' events arrive faster than a receiver on the same two cores reads them, and
Redis drops a pub/sub reader that falls that far behind (its output buffer limit), so
the count stalled short of N with every task done. The tasks' own Redis writes are
never lost.
"""

from __future__ import annotations

import time
from typing import Any

from bench import noop_app
from bench.context import Run
from bench.harness import percentile, summary_ms, wait_until


def round_trips(r: Run, n: int) -> list[float]:
    red, send = r.env.redis(), r.c.celery.send_task
    red.set(noop_app.COUNT_KEY, 0)
    out = []
    for i in range(n):
        t0 = time.perf_counter()
        send(noop_app.TASK, queue=noop_app.QUEUE)
        wait_until(
            lambda i=i: int(red.get(noop_app.COUNT_KEY) or 0) > i,
            10,
            interval=0.0005,
            what="no-op task",
        )
        out.append(time.perf_counter() - t0)
    return out


def run(r: Run) -> dict[str, Any]:
    conc, n = r.plan.concurrency, r.plan.noop_tasks
    env, _ = r.worker_env(latency=0.0, concurrency=conc)
    w = r.env.start_worker(app="bench.noop_app", concurrency=conc, env=env, name="noop")
    try:
        rtt = round_trips(r, r.plan.noop_rtt)
        red = r.env.redis()
        r.c.consume(noop_app.QUEUE, 1, on=False)
        red.set(noop_app.COUNT_KEY, 0)
        for _ in range(n):
            r.c.celery.send_task(noop_app.TASK, queue=noop_app.QUEUE)
        cpu0, t0 = w.cpu(), time.time()
        r.c.consume(noop_app.QUEUE, 1, on=True)
        try:
            wait_until(
                lambda: int(red.get(noop_app.COUNT_KEY) or 0) >= n,
                60 + n / 20,
                interval=0.005,
                what=f"{n} no-op tasks",
            )
        except TimeoutError:
            done = int(red.get(noop_app.COUNT_KEY) or 0)
            raise RuntimeError(f"only {done} of {n} no-op tasks ended in time") from None
        cpu1 = w.cpu()
        end = float(red.get(noop_app.LAST_KEY) or time.time())
    finally:
        r.env.stop(w)
    wall = end - t0
    r.figures["noop_tasks_per_s_1w"] = n / wall
    r.figures["noop_cpu_ms_per_task"] = 1000.0 * (cpu1 - cpu0) / n
    r.figures["noop_round_trip_p50_ms"] = 1000.0 * percentile(rtt, 50)
    return {
        "concurrency": conc,
        "tasks": n,
        "seconds": wall,
        "worker_cpu_s": cpu1 - cpu0,
        "round_trip": summary_ms(rtt),
    }
