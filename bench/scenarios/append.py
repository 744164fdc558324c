"""``Store.turns.append`` (the product's checkpoint) from 16 threads of the bench process
at once, each on its own claimed session and started turn: the p50 of one
checkpoint under that contention (``append_in_situ_p50_ms``), read against the raw
commit of the idle Postgres scenario.

Each thread commits back to back (a closed loop with no think time), so on two
cores the p50 is about 16 / the rate the box sustains. For scale, the same 16
threads then run raw single-row UPDATEs (each on a row of its own, psycopg
autocommit): ``raw_commit_16threads_p50_ms`` is the floor at that concurrency.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import psycopg

from bench.context import Run
from bench.harness import app_url_of, percentile, summary_ms
from bench.storeapi import timed_checkpoints
from turnkeep.store.facade import Store

WARMUP = 5  # commits per thread left out (new connections, first statements)


def in_threads(threads: int, body: Callable[[int, threading.Barrier], list[float]]) -> list[float]:
    """Run ``body(i, barrier)`` on ``threads`` threads; every duration it returned."""
    barrier = threading.Barrier(threads, timeout=60)
    found: list[list[float]] = [[] for _ in range(threads)]
    errors: list[BaseException] = []

    def one(i: int) -> None:
        try:
            found[i] = body(i, barrier)[WARMUP:]
        except BaseException as exc:
            errors.append(exc)
            barrier.abort()

    pool = [threading.Thread(target=one, args=(i,)) for i in range(threads)]
    for th in pool:
        th.start()
    for th in pool:
        th.join(timeout=300)
    if errors:
        raise errors[0]
    return [s for per in found for s in per]


def raw_updates(pg_url: str, steps: int) -> Callable[[int, threading.Barrier], list[float]]:
    def body(i: int, barrier: threading.Barrier) -> list[float]:
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute("INSERT INTO bench_raw16 VALUES (%s, 0)", (i,))
            barrier.wait()
            out = []
            for _ in range(steps):
                t0 = time.perf_counter()
                conn.execute("UPDATE bench_raw16 SET n = n + 1 WHERE id = %s", (i,))
                out.append(time.perf_counter() - t0)
        return out

    return body


def run(r: Run) -> dict[str, Any]:
    threads, steps = r.plan.append_threads, r.plan.append_steps
    t = r.tenant("append-situ")
    for i in range(threads):
        r.c.admit(t, r.c.session(i), enqueue=False, n=i)
    store = Store.from_url(app_url_of(r.env.dbname), pool_size=threads)
    try:
        t0 = time.perf_counter()
        appends = in_threads(
            threads,
            lambda i, barrier: timed_checkpoints(
                store, t, r.c.session(i), fence=1, steps=steps + WARMUP, barrier=barrier
            ),
        )
        wall = time.perf_counter() - t0
    finally:
        store.close()
    with psycopg.connect(r.env.pg_url, autocommit=True) as conn:
        conn.execute("CREATE TABLE bench_raw16 (id int PRIMARY KEY, n bigint NOT NULL)")
    raw = in_threads(threads, raw_updates(r.env.pg_url, steps + WARMUP))
    r.figures["append_in_situ_p50_ms"] = 1000.0 * percentile(appends, 50)
    r.figures["raw_commit_16threads_p50_ms"] = 1000.0 * percentile(raw, 50)
    return {
        "threads": threads,
        "checkpoints_per_thread": steps,
        "appends_per_s": threads * (steps + WARMUP) / wall,  # start-ups included
        "raw_16threads": summary_ms(raw),
        **summary_ms(appends),
    }
