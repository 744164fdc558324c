"""The Postgres floor, idle, one connection: a raw single-row UPDATE in autocommit
(one round trip, one WAL flush: ``raw_commit_p50_ms``), a raw ``SELECT 1`` round
trip, and the product's checkpoint (``Store.turns.append``) from one thread."""

from __future__ import annotations

import time
from typing import Any

import psycopg

from bench.context import Run
from bench.harness import percentile, summary_ms
from bench.storeapi import timed_checkpoints

WARMUP = 20


def raw_commits(pg_url: str, n: int) -> tuple[list[float], list[float]]:
    """Seconds of ``n`` single-row UPDATE commits and ``n`` SELECT 1 round trips."""
    update, select = [], []
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("CREATE TABLE IF NOT EXISTS bench_raw (id int PRIMARY KEY, n bigint)")
        conn.execute("INSERT INTO bench_raw VALUES (1, 0) ON CONFLICT DO NOTHING")
        for i in range(n + WARMUP):
            t0 = time.perf_counter()
            conn.execute("UPDATE bench_raw SET n = n + 1 WHERE id = 1")
            t1 = time.perf_counter()
            conn.execute("SELECT 1").fetchone()
            t2 = time.perf_counter()
            if i >= WARMUP:
                update.append(t1 - t0)
                select.append(t2 - t1)
    return update, select


def run(r: Run) -> dict[str, Any]:
    update, select = raw_commits(r.env.pg_url, r.plan.raw_n)
    r.figures["raw_commit_p50_ms"] = 1000.0 * percentile(update, 50)
    t = r.tenant("append-idle")
    r.c.admit(t, r.c.session(0), enqueue=False)
    appends = timed_checkpoints(
        r.c.store, t, r.c.session(0), fence=1, steps=r.plan.append_idle_n + WARMUP
    )[WARMUP:]
    r.figures["append_idle_p50_ms"] = 1000.0 * percentile(appends, 50)
    return {
        "raw_update_commit": summary_ms(update),
        "raw_select_1": summary_ms(select),
        "store_append_idle": summary_ms(appends),
    }
