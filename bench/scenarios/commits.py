"""What the worker's statements are (``--breakdown``; diagnostic, no headline
figure): a drain like the turns scenario's on a worker loaded with bench/probe.py,
which counts from inside the process every statement psycopg sends (by its
store/sql/*.sql name), the transaction commands, new connections and Redis commands.
The probe's own CPU makes this worker slower: its figures are never the measured
ones. ``server transactions`` (autocommit statements + COMMIT + ROLLBACK + new
connections + server-side prepares, each a Parse round trip of its own) match
``worker_statements_per_turn`` when both drains are equally warm.
"""

from __future__ import annotations

import json
import time
from typing import Any

from bench.context import Run
from bench.events import TaskLog
from bench.harness import Proc, wait_until
from bench.scenarios.turns import drain
from turnkeep.runtime.names import QUEUE, TASK_RUN_SESSION


def _snapshot(r: Run, w: Proc, after: float) -> dict[str, int]:
    red = r.env.redis()

    def fresh() -> dict[str, Any] | None:
        raw = red.get(f"bench:probe:{w.pid}")
        snap = json.loads(raw) if raw else None
        return snap if snap and snap["ts"] > after else None

    snap = wait_until(fresh, 10, interval=0.05, what="probe snapshot")
    return dict(snap["counts"])


def run(r: Run) -> dict[str, Any]:
    n, c = r.plan.turns, r.c
    w, _ = r.start_turn_worker(
        concurrency=r.plan.concurrency,
        latency=0.0,
        name="probe",
        include="bench.probe",
        BENCH_PROBE="1",
    )
    try:
        drain(r, "probe-warm", n)
        t = r.tenant("probe")
        c.admit_many(t, n, enqueue=False)
        c.consume(QUEUE, 1, on=False)
        c.enqueue_many(t, n)
        time.sleep(0.5)
        before = _snapshot(r, w, time.time())
        with TaskLog(w, TASK_RUN_SESSION) as events:
            events.reset(n, w.pid)
            c.consume(QUEUE, 1, on=True)
            if not events.wait(n, timeout=60 + 2 * n):
                raise RuntimeError(f"only {events.done} of {n} tasks ended in time")
        time.sleep(0.5)
        after = _snapshot(r, w, time.time())
    finally:
        r.env.stop(w)
    per_turn = {
        k: (after.get(k, 0) - before.get(k, 0)) / n
        for k in sorted(set(after) | set(before))
        if after.get(k, 0) != before.get(k, 0)
    }
    server = sum(
        v
        for k, v in per_turn.items()
        if k in ("tx:autocommit_statement", "tx:COMMIT", "tx:ROLLBACK", "pg:connect", "pg:prepare")
    )
    sql = sum(v for k, v in per_turn.items() if k.startswith("sql:"))
    redis_calls = sum(v for k, v in per_turn.items() if k.startswith("redis:"))
    return {
        "turns": n,
        "server_transactions_per_turn": server,
        "sql_statements_per_turn": sql,
        "redis_calls_per_turn": redis_calls,
        "per_turn": per_turn,
    }
