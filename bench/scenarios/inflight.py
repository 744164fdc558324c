"""In-flight capacity: 1 worker at c64 (and c256 in the full run), 1.0 s per model
call (2 s of model time per turn), K = C one-turn sessions enqueued in one burst.

Samples ``count(*) WHERE state = 'running'`` every 50 ms: *peak* and *steady*
(median over the middle half of the busy window) should both reach K, and *total*
should be close to the 2 s ideal. Also: the worker's CPU per turn (a slow model must
not burn CPU), idle CPU, peak threads and Postgres connections, and its transactions
per turn (less the bench's polls and the K admissions). With ``--py-spy``, two thread
dumps classify what the worker's threads are doing mid-run.
"""

from __future__ import annotations

import statistics
import time
from typing import Any

from bench import pyspy
from bench.context import RESULTS, Run
from bench.harness import proc_status, server_transactions, settled_stats
from turnkeep.runtime.names import QUEUE

Sample = tuple[float, int, int, int, int, int]


def quiet_stats(r: Run) -> dict[str, int]:
    r.c.disconnect()
    time.sleep(0.3)
    return settled_stats(r.env.dbname, quiet=0.5)


def steady(samples: list[Sample]) -> float:
    running = [s for s in samples if s[1] > 0]
    if not running:
        return float("nan")
    a, b = running[0][0], running[-1][0]
    mid = [s[1] for s in samples if a + (b - a) / 4 <= s[0] <= b - (b - a) / 4]
    return statistics.median(mid) if mid else float("nan")


def run_one(r: Run, conc: int) -> dict[str, Any]:
    c, lat = r.c, r.plan.inflight_latency
    t, k = r.tenant(f"inflight{conc}"), conc
    before = quiet_stats(r)
    polls0 = c.polls
    w, pool = r.start_turn_worker(concurrency=conc, latency=lat, name=f"inflight{conc}")
    idle0 = w.cpu()
    time.sleep(2.0)
    idle_cpu = (w.cpu() - idle0) / 2.0
    c.admit_many(t, k, enqueue=False)
    samples: list[Sample] = []
    red = r.env.redis()

    def on_sample(at: float, s: tuple[int, int, int]) -> None:
        threads = proc_status(w.pid).get("Threads", 0)
        samples.append((at, s[0], s[1], s[2], threads, int(red.llen(QUEUE))))

    cpu0, t0 = w.cpu(), time.time()
    dumps = None
    if r.args.py_spy and pyspy.available():
        dumps = pyspy.dumps_later(w.pid, [1.0, 2.5], RESULTS / f"pyspy-dump-c{conc}-{r.stamp}")
    c.enqueue_many(t, k)
    ok = c.wait_terminal(t, k, timeout=60 + 4 * lat * k / 10, interval=0.05, on_sample=on_sample)
    cpu = w.cpu() - cpu0
    if dumps is not None:
        dumps[1].join(timeout=30)
    status = proc_status(w.pid)
    r.env.stop(w)
    polls = c.polls - polls0
    after = quiet_stats(r)
    res = c.outcome(t)
    total = res["last_updated"] - t0 if res["last_updated"] else float("nan")
    xacts = server_transactions(after) - server_transactions(before)
    series = [(round(s[0], 2), *s[1:]) for s in samples[:: max(1, len(samples) // 60)]]
    return {
        "concurrency": conc,
        "turns": k,
        "model_latency_s": lat,
        "all_terminal": ok,
        "states": res["states"],
        "pool": pool,
        "peak_running": max((s[1] for s in samples), default=0),
        "steady_running": steady(samples),
        "seconds": total,
        "ideal_seconds": 2 * lat,
        "overhead_s": total - 2 * lat,
        "all_started_after_s": (res["last_started"] - t0) if res["last_started"] else None,
        "turn_latency": res["turn_latency"],
        "worker_cpu_s": cpu,
        "worker_cpu_pct_of_core": 100.0 * cpu / total,
        "worker_idle_cpu_pct_of_core": 100.0 * idle_cpu,
        "worker_cpu_ms_per_turn": 1000.0 * cpu / k,
        "peak_worker_threads": max((s[4] for s in samples), default=0),
        "peak_pg_connections": max((s[3] for s in samples), default=0),
        "worker_rss_mb": status.get("VmRSS", 0) / 1024.0,
        # the worker's transactions (its start-up scan and connections included): all,
        # less the K admissions and the bench's own polls
        "worker_xacts_per_turn": (xacts - polls - k) / k,
        "samples(t,running,terminal,pg_conns,threads,queue_len)": series,
        "pyspy_dumps": dumps[0] if dumps is not None else None,
    }


def run(r: Run) -> dict[str, Any]:
    out = {f"c{conc}": run_one(r, conc) for conc in r.plan.inflight}
    first = out[f"c{r.plan.inflight[0]}"]
    r.figures[f"inflight_c{r.plan.inflight[0]}_peak_running"] = first["peak_running"]
    # every concurrency's figures under its own names: --quick (c64 only) still says
    # something, the full run carries c64 and c256 (the goal is at c256)
    for key, res in out.items():
        total = res["seconds"]
        r.figures[f"inflight_{key}_total_s"] = total
        r.figures[f"inflight_{key}_ideal_s"] = res["ideal_seconds"]
        if total == total and total > 0:  # not NaN: every turn ended
            r.figures[f"inflight_{key}_worker_cores"] = res["worker_cpu_s"] / total
    return out
