"""Worker benchmarks: in-flight capacity, commits per step, turns/s, and the raw
Celery and Postgres baselines they are read against, all measured in one run.

    .venv/bin/python bench/workers.py            # full run (a few minutes)
    .venv/bin/python bench/workers.py --quick    # smaller counts (about a minute)

A harness, not a test: it never fails a build. It creates its own database (dropped
at the end), uses a dedicated Redis db (flushed at start and end), starts real
``celery -A worker.app worker --pool threads`` processes, prints a table and writes
the same figures to bench/results/workers-<timestamp>.json. See bench/README.md.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import resource
import signal
import statistics
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make the repo importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import psycopg

from bench import noop_app, probe
from bench.client import Client
from bench.harness import (
    ROOT,
    BenchEnv,
    Worker,
    proc_status,
    server_facts,
    settled_stats,
    summary_ms,
    system_cpu,
    wait_until,
)
from runtime.names import QUEUE
from runtime.states import EventType, TurnState

RESULTS = ROOT / "bench" / "results"


# -- configuration ---------------------------------------------------------------------


class Plan:
    """Sizes of one run; --quick shrinks them."""

    def __init__(self, quick: bool) -> None:
        self.quick = quick
        self.raw_n = 200 if quick else 500
        self.append_n = 100 if quick else 300
        self.commit_turns = 40 if quick else 120
        self.tput_turns = 100 if quick else 400
        self.single_turns = 8 if quick else 20
        self.noop_tasks = 500 if quick else 2000
        self.noop_rtt = 40 if quick else 100
        self.concurrency = 16
        self.inflight = [64] if quick else [64, 256]
        self.latency = 1.0


class PoolCap:
    """Keeps the bench's worst case of Postgres connections inside a budget.

    A worker sizes its pool as max(db_pool_size, worker_concurrency + 2) with as many
    overflow connections again, so at concurrency 256 one process may open 516
    connections; this Postgres (shared with other engineers' tests) has
    max_connections 100. A worker never uses more connections at once than threads
    (+1), so when (C + 2) x workers fits the budget the product defaults are kept;
    otherwise TURNKEEP_WORKER_CONCURRENCY / TURNKEEP_DB_POOL_SIZE cap the pool and
    the figures say so.
    """

    def __init__(self, budget: int, enabled: bool) -> None:
        self.budget = budget
        self.enabled = enabled

    def env(self, concurrency: int, workers: int) -> tuple[dict[str, str], dict[str, Any]]:
        product_pool = max(10, concurrency + 2)
        info: dict[str, Any] = {
            "product_pool_size": product_pool,
            "product_max_connections_per_worker": 2 * product_pool,
        }
        if not self.enabled or (concurrency + 2) * workers <= self.budget:
            info.update(pool_size=product_pool, capped=False)
            return {"TURNKEEP_WORKER_CONCURRENCY": str(concurrency)}, info
        pool = max(3, self.budget // (2 * workers))
        info.update(pool_size=pool, capped=True, max_connections_per_worker=2 * pool)
        return {
            "TURNKEEP_WORKER_CONCURRENCY": str(pool - 2),
            "TURNKEEP_DB_POOL_SIZE": str(pool),
        }, info


class Run:
    """Shared state of one bench run."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.plan = Plan(args.quick)
        self.env = BenchEnv(redis_db=args.redis_db, keep_logs=args.keep_logs)
        self.client: Client | None = None
        self.cap = PoolCap(0, False)
        self.stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")

    @property
    def c(self) -> Client:
        assert self.client is not None
        return self.client

    def worker_env(
        self, *, latency: float, concurrency: int, workers: int, probe_role: str | None = None
    ) -> tuple[dict[str, str], dict[str, Any]]:
        env, info = self.cap.env(concurrency, workers)
        env["TURNKEEP_DEMO_LATENCY"] = repr(latency)
        if probe_role:
            env["BENCH_PROBE_ROLE"] = probe_role
        return env, info

    def start_turn_workers(
        self,
        n: int,
        *,
        concurrency: int,
        latency: float,
        name: str,
        include: str | None = None,
        probe_role: str | None = None,
    ) -> tuple[list[Worker], dict[str, Any]]:
        env, info = self.worker_env(
            latency=latency, concurrency=concurrency, workers=n, probe_role=probe_role
        )
        ws = [
            self.env.start_worker(concurrency=concurrency, env=env, include=include, name=name)
            for _ in range(n)
        ]
        return ws, info


def tenant(name: str) -> str:
    return f"bench-{name}-{os.getpid()}"


def self_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


# -- 0. Postgres baselines ----------------------------------------------------------------


def bench_postgres(run: Run) -> dict[str, Any]:
    """Raw single-row UPDATE commits and SELECT 1 round trips (psycopg autocommit), then
    the product's checkpoint commit (Store.append) and a read (Store.get_turn), idle."""
    n = run.plan.raw_n
    with psycopg.connect(run.env.pg_url, autocommit=True) as conn:
        conn.execute("CREATE TABLE bench_raw (id int PRIMARY KEY, n bigint NOT NULL)")
        conn.execute("INSERT INTO bench_raw VALUES (1, 0)")
        update, select = [], []
        for i in range(n + 20):
            t0 = time.perf_counter()
            conn.execute("UPDATE bench_raw SET n = n + 1 WHERE id = 1")
            t1 = time.perf_counter()
            conn.execute("SELECT 1").fetchone()
            t2 = time.perf_counter()
            if i >= 20:
                update.append(t1 - t0)
                select.append(t2 - t1)
    out = {"raw_update_commit": summary_ms(update), "raw_select_1": summary_ms(select)}
    out.update(bench_store_append(run))
    return out


def bench_store_append(run: Run) -> dict[str, Any]:
    store, c = run.c.store, run.c
    t, s = tenant("append"), "s00000"
    c.admit(t, s, enqueue=False)
    assert store.claim(t, s, 1)
    head = store.lane_head(t, s)
    assert head is not None
    tid = head.turn_id
    kw: dict[str, Any] = {"tenant_id": t, "session_id": s, "turn_id": tid, "fence": 1}
    rev = store.append(
        **kw,
        revision=head.revision,
        state=TurnState.RUNNING,
        type=EventType.TURN_STARTED,
        data={"attempt": 1},
        attempt_inc=1,
    ).revision
    message = {
        "role": "assistant",
        "content": "Let me look that up.",
        "tool_calls": [{"id": "call_1", "name": "get_weather", "arguments": {"city": "Oslo"}}],
    }
    data = {
        "message": message,
        "usage": {"input_tokens": 40, "output_tokens": 6},
        "model": "demo/weather",
    }
    appends, reads = [], []
    for step in range(1, run.plan.append_n + 21):
        t0 = time.perf_counter()
        rev = store.append(
            **kw,
            revision=rev,
            state=TurnState.RUNNING,
            type=EventType.MODEL_COMPLETED,
            data=data,
            step=step,
        ).revision
        t1 = time.perf_counter()
        store.get_turn(t, s, tid)
        t2 = time.perf_counter()
        if step > 20:
            appends.append(t1 - t0)
            reads.append(t2 - t1)
    # settle it: a running turn left behind would be found by a worker's start-up scan
    store.append(
        **kw,
        revision=rev,
        state=TurnState.COMPLETED,
        type=EventType.TURN_COMPLETED,
        data={"result": {"text": "done"}},
        result={"text": "done"},
    )
    return {"store_append": summary_ms(appends), "store_get_turn": summary_ms(reads)}


# -- 1. commits per step ------------------------------------------------------------------


def _probe_snapshot(run: Run, pid: int, after: float, timeout: float = 10.0) -> dict[str, Any]:
    """The worker probe's newest snapshot written after ``after`` (epoch seconds)."""
    r = run.env.redis()
    key = f"bench:probe:worker:{pid}"

    def fresh() -> dict[str, Any] | None:
        raw = r.get(key)
        snap = json.loads(raw) if raw else None
        return snap if snap and snap["ts"] > after else None

    return wait_until(fresh, timeout, interval=0.05, what="probe snapshot")  # type: ignore[no-any-return]


def _delta(after: dict[str, int], before: dict[str, int]) -> dict[str, int]:
    return {
        k: after.get(k, 0) - before.get(k, 0)
        for k in set(after) | set(before)
        if after.get(k, 0) != before.get(k, 0)
    }


def quiet_stats(run: Run) -> dict[str, int]:
    """pg_stat_database of the bench database with no live connection to it but the
    poll connection, which has just been reopened (so it holds no pending counts)."""
    run.c.quiesce()
    time.sleep(0.3)
    return settled_stats(run.env.dbname, quiet=0.5)


def bench_commits(run: Run) -> dict[str, Any]:
    """Every transaction of N turns, counted by Postgres and by the in-process probe.

    The window opens with no worker and no bench connection alive and closes after
    the worker stopped and the bench closed its connections, because a live backend
    may hold its statistics back for up to 10 s. So the worker is cold: its start-up
    recovery scan, its new connections and SQLAlchemy's first-connect queries fall
    in the window, and the probe counts them too.
    """
    plan, c = run.plan, run.c
    probe.install("bench", flush=False)  # counts the bench's own admissions
    t, n = tenant("commits"), plan.commit_turns
    before = quiet_stats(run)
    bb, polls0 = probe.snapshot(), c.polls
    (w,), pool = run.start_turn_workers(
        1,
        concurrency=plan.concurrency,
        latency=0.0,
        name="probe-worker",
        include="bench.probe",
        probe_role="worker",
    )
    c.admit_many(t, n)
    ok = c.wait_terminal(t, n, timeout=60 + n, interval=0.25)
    wa = _probe_snapshot(run, w.pid, time.time())
    run.env.stop_workers()
    ba, polls = probe.snapshot(), c.polls - polls0
    after = quiet_stats(run)
    out = c.outcome(t)
    worker = wa["counts"]
    bench = _delta(ba["counts"], bb["counts"])
    stats = _delta(after, before)
    return _commit_report(n, ok, out, stats, worker, bench, polls, wa["append_seconds"], pool)


def _commit_report(
    n: int,
    ok: bool,
    out: dict[str, Any],
    stats: dict[str, int],
    worker: dict[str, int],
    bench: dict[str, int],
    polls: int,
    appends: list[float],
    pool: dict[str, Any],
) -> dict[str, Any]:
    steps = max(1, out["steps"])
    xact = stats.get("xact_commit", 0)
    fenced_appends = sum(v for k, v in worker.items() if k.startswith("sql:fenced_append"))
    claims = worker.get("sql:claim_fence", 0)
    admissions = bench.get("tx:commit", 0)
    worker_commits = worker.get("tx:commit", 0) + worker.get("tx:autocommit_statement", 0)
    reads = worker_commits - claims - fenced_appends
    # SQLAlchemy's psycopg pre-ping runs SELECT 1 in autocommit: its own transaction
    pings = worker.get("pool:pre_ping", 0) + bench.get("pool:pre_ping", 0)
    new_sessions = stats.get("sessions", 0)  # each backend start-up commits one too
    product_xact = xact - polls
    breakdown = {
        "admission": admissions,
        "claim_fence": claims,
        **{k[4:]: v for k, v in sorted(worker.items()) if k.startswith("sql:fenced_append")},
        "reads (worker)": reads,
        "pool pre-ping SELECT 1": pings,
        "backend start-ups": new_sessions,
    }
    explained = sum(breakdown.values()) + polls
    statements = sum(v for k, v in worker.items() if k.startswith("sql:"))
    round_trips = (
        worker.get("pool:pre_ping", 0)
        + worker.get("tx:begin", 0)
        + statements
        + worker.get("tx:commit", 0)
        + worker.get("tx:rollback", 0)
    )
    return {
        "turns": n,
        "all_terminal": ok,
        "states": out["states"],
        "steps": out["steps"],
        "events": out["events"],
        "pool": pool,
        "pg_stat_database_delta": stats,
        "bench_poll_transactions": polls,
        "xact_commit_product": product_xact,
        "xact_commit_per_step": product_xact / steps,
        "xact_commit_per_turn": product_xact / n,
        "xact_commit_per_step_without_pings": (product_xact - pings) / steps,
        "xact_breakdown_per_turn": {k: v / n for k, v in breakdown.items()},
        "xact_unexplained": xact - explained,
        "fenced_writes_per_step": (claims + fenced_appends) / steps,
        "fenced_appends_per_step": fenced_appends / steps,
        "all_writes_per_step": (admissions + claims + fenced_appends) / steps,
        "reads_per_step": reads / steps,
        "worker_sql_round_trips_per_turn": round_trips / n,
        "redis_calls_per_turn": sum(v for k, v in worker.items() if k.startswith("redis:")) / n,
        "worker_counts_per_turn": {k: v / n for k, v in sorted(worker.items())},
        "store_append_in_situ": summary_ms(appends),
    }


# -- 2. turns/s and the no-op baseline -------------------------------------------------------


def bench_single_turn(run: Run) -> dict[str, Any]:
    """One turn at a time on an idle worker: admission to terminal, client-observed."""
    t = tenant("single")
    lat = []
    for i in range(run.plan.single_turns):
        t0 = time.perf_counter()
        run.c.admit(t, f"s{i:05d}", n=i)
        if not run.c.wait_turn(t, f"s{i:05d}"):
            raise RuntimeError("a single turn did not finish in 30 s")
        lat.append(time.perf_counter() - t0)
    return summary_ms(lat)


def _pyspy_start(run: Run, pid: int, label: str) -> tuple[subprocess.Popen[bytes], Path] | None:
    exe = Path(sys.executable).with_name("py-spy")
    if not run.args.py_spy or not exe.exists():
        return None
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / f"pyspy-{label}-{run.stamp}.txt"
    p = subprocess.Popen(
        [
            str(exe),
            "record",
            "--pid",
            str(pid),
            "--rate",
            "250",
            "--format",
            "raw",
            "--output",
            str(out),
            "--gil",
            "--nonblocking",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    time.sleep(1.0)  # let it attach
    return p, out


def _pyspy_stop(handle: tuple[subprocess.Popen[bytes], Path] | None) -> dict[str, Any] | None:
    if handle is None:
        return None
    p, out = handle
    p.send_signal(signal.SIGINT)
    try:
        p.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.wait(timeout=5)
    return summarize_pyspy(out) if out.exists() else None


PRODUCT_DIRS = ("worker/", "store/", "runtime/", "recovery/")
LIBRARIES = (
    "sqlalchemy",
    "psycopg",
    "redis",
    "kombu",
    "celery",
    "jsonschema",
    "json",
    "logging",
    "threading",
    "uuid",
    "pydantic",
)


def _frame(frame: str) -> tuple[str, str]:
    """('func', 'path') of one py-spy raw frame 'func (path:line)'."""
    func, _, where = frame.rpartition(" (")
    return func, where.rsplit(":", 1)[0]


def _layer(frames: list[tuple[str, str]]) -> str:
    """The innermost known layer of a stack: the library (or our code) on top of it."""
    for _, where in reversed(frames):
        # py-spy names files relative to their sys.path entry: "psycopg/cursor.py"
        top_name = where.split("/", 1)[0].removesuffix(".py")
        if top_name in LIBRARIES:
            return top_name
        if where.startswith(PRODUCT_DIRS):
            return "turnkeep"
    return "other"


def summarize_pyspy(path: Path, top: int = 12) -> dict[str, Any]:
    """Self time by leaf function and by layer, inclusive time by product function,
    as % of samples (py-spy --gil: samples of the thread holding the GIL, i.e. CPU)."""
    self_t: dict[str, int] = {}
    libs: dict[str, int] = {}
    ours: dict[str, int] = {}
    total = 0
    for line in path.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not count.isdigit() or not stack:
            continue
        k = int(count)
        total += k
        frames = [_frame(f) for f in stack.split(";")]
        func, where = frames[-1]
        leaf = f"{func} ({where})"
        self_t[leaf] = self_t.get(leaf, 0) + k
        layer = _layer(frames)
        libs[layer] = libs.get(layer, 0) + k
        seen_ours = {
            f"{func} ({where})" for func, where in frames if where.startswith(PRODUCT_DIRS)
        }
        for name in seen_ours:
            ours[name] = ours.get(name, 0) + k

    def pct(d: dict[str, int], n: int) -> list[tuple[str, float]]:
        ranked = sorted(d.items(), key=lambda kv: -kv[1])[:n]
        return [(name, round(100.0 * v / max(1, total), 1)) for name, v in ranked]

    return {
        "file": str(path),
        "samples": total,
        "self": pct(self_t, top),
        "by_layer": pct(libs, len(LIBRARIES) + 2),
        "product_inclusive": pct(ours, top),
    }


DUMP_CLASSES = (
    ("sqlalchemy/pool/", "waiting for a pooled Postgres connection"),
    ("psycopg/", "in a Postgres round trip"),
    ("redis/", "in a Redis round trip"),
    ("runtime/demo_model.py", "in the model call (demo sleep)"),
    ("worker/heartbeat.py", "lease heartbeat thread"),
    ("concurrent/futures/thread.py", "idle pool thread"),
    ("kombu/", "celery/kombu internals"),
    ("celery/", "celery/kombu internals"),
)


def summarize_dump(text: str) -> dict[str, int]:
    """Threads of a ``py-spy dump`` by what they are doing (innermost known frame)."""
    out: dict[str, int] = {}
    for block in text.split("\nThread ")[1:]:
        frames = [ln.strip() for ln in block.splitlines()[1:] if ln.startswith("    ")]
        label = "other: " + (frames[0] if frames else "?")
        for frame in frames:
            where = frame.rpartition(" (")[2]
            hit_ = next((lab for key, lab in DUMP_CLASSES if where.startswith(key)), None)
            if hit_:
                label = hit_
                break
        out[label] = out.get(label, 0) + 1
    return dict(sorted(out.items(), key=lambda kv: -kv[1]))


def pyspy_dump_later(
    run: Run, pid: int, delays: list[float], label: str
) -> tuple[list[dict[str, Any]], threading.Thread] | None:
    """Dump the worker's threads at ``delays`` seconds from now, on a thread."""
    exe = Path(sys.executable).with_name("py-spy")
    if not run.args.py_spy or not exe.exists():
        return None
    found: list[dict[str, Any]] = []

    def go() -> None:
        t0 = time.monotonic()
        for i, d in enumerate(delays):
            time.sleep(max(0.0, t0 + d - time.monotonic()))
            text = ""
            for _ in range(3):  # a non-blocking read of a changing thread list can come
                try:  # back empty: try again at once
                    done = subprocess.run(
                        [str(exe), "dump", "--pid", str(pid), "--nonblocking"],
                        capture_output=True,
                        text=True,
                        timeout=20,
                    )
                    text = done.stdout or done.stderr
                except subprocess.TimeoutExpired:
                    continue
                if summarize_dump(text):
                    break
            RESULTS.mkdir(parents=True, exist_ok=True)
            path = RESULTS / f"pyspy-dump-{label}-{i}-{run.stamp}.txt"
            path.write_text(text)
            found.append(
                {
                    "at_s": round(time.monotonic() - t0, 2),
                    "file": str(path),
                    "threads": summarize_dump(text),
                }
            )

    th = threading.Thread(target=go, daemon=True)
    th.start()
    return found, th


def bench_turns(run: Run, workers: int) -> dict[str, Any]:
    plan, c = run.plan, run.c
    ws, pool = run.start_turn_workers(
        workers, concurrency=plan.concurrency, latency=0.0, name=f"tput{workers}"
    )
    out: dict[str, Any] = {"workers": workers, "concurrency": plan.concurrency, "pool": pool}
    if workers == 1:
        out["single_turn_latency"] = bench_single_turn(run)
    spy = _pyspy_start(run, ws[0].pid, f"turns{workers}") if workers == 1 else None
    t, n = tenant(f"tput{workers}"), plan.tput_turns
    cpu0, me0, sys0 = [w.cpu() for w in ws], self_cpu(), system_cpu()
    admit_s = c.admit_many(t, n)
    ok = c.wait_terminal(t, n, timeout=60 + 2 * n, interval=0.1)
    cpu = sum(w.cpu() - c0 for w, c0 in zip(ws, cpu0, strict=True))
    me = self_cpu() - me0
    sys1 = system_cpu()
    machine = (sys1[0] - sys0[0]) / max(1e-9, (sys1[1] - sys0[1])) * (os.cpu_count() or 1)
    out["pyspy"] = _pyspy_stop(spy)
    res = c.outcome(t)
    out["drain"] = _drain(run, workers, n)
    run.env.stop_workers()
    wall = res["last_updated"] - res["first_admitted"]
    out.update(
        turns=n,
        all_terminal=ok,
        states=res["states"],
        seconds=wall,
        turns_per_s=n / wall if ok else float("nan"),
        admission_seconds=admit_s,
        admissions_per_s=n / admit_s,
        turn_latency=res["turn_latency"],
        worker_cpu_s=cpu,
        worker_cpu_ms_per_turn=1000.0 * cpu / n,
        bench_client_cpu_s=me,
        cpu_cores_busy=(cpu + me) / wall,
        machine_cores_busy=machine,
    )
    return out


def _drain(run: Run, workers: int, n: int) -> dict[str, Any]:
    """The same turns admitted and enqueued while the workers consume nothing, then
    released to all workers at once: the workers' own rate, without the bench's
    admissions competing for the cores."""
    c, t = run.c, tenant(f"drain{workers}")
    c.consume(QUEUE, workers, on=False)
    c.admit_many(t, n)
    t0 = time.time()
    c.consume(QUEUE, workers, on=True)
    ok = c.wait_terminal(t, n, timeout=60 + 2 * n, interval=0.1)
    res = c.outcome(t)
    wall = res["last_updated"] - t0
    return {
        "turns": n,
        "all_terminal": ok,
        "states": res["states"],
        "seconds": wall,
        "turns_per_s": n / wall if ok else float("nan"),
    }


def bench_noop(run: Run, workers: int) -> dict[str, Any]:
    plan, r = run.plan, run.env.redis()
    env, _ = run.worker_env(latency=0.0, concurrency=plan.concurrency, workers=workers)
    ws = [
        run.env.start_worker(
            app="bench.noop_app", concurrency=plan.concurrency, env=env, name=f"noop{workers}"
        )
        for _ in range(workers)
    ]
    out: dict[str, Any] = {"workers": workers, "concurrency": plan.concurrency}
    send = run.c.celery.send_task
    if workers == 1:
        rtt = []
        r.set(noop_app.COUNT_KEY, 0)
        for i in range(plan.noop_rtt):
            t0 = time.perf_counter()
            send(noop_app.TASK, queue=noop_app.QUEUE)
            wait_until(
                lambda i=i: int(r.get(noop_app.COUNT_KEY) or 0) > i,
                10,
                interval=0.0005,
                what="no-op task",
            )
            rtt.append(time.perf_counter() - t0)
        out["round_trip"] = summary_ms(rtt)
    n = plan.noop_tasks
    cpu0 = [w.cpu() for w in ws]
    live = _noop_burst(r, n, send)
    cpu = sum(w.cpu() - c0 for w, c0 in zip(ws, cpu0, strict=True))
    run.c.consume(noop_app.QUEUE, workers, on=False)
    drain = _noop_burst(r, n, send, release=lambda: run.c.consume(noop_app.QUEUE, workers, on=True))
    run.env.stop_workers()
    out.update(
        tasks=n,
        seconds=live["seconds"],
        tasks_per_s=live["tasks_per_s"],
        publish_per_s=live["publish_per_s"],
        worker_cpu_ms_per_task=1000.0 * cpu / n,
        drain=drain,
    )
    return out


def _noop_burst(
    r: Any, n: int, send: Callable[..., Any], release: Callable[[], None] | None = None
) -> dict[str, float]:
    """Publish ``n`` no-op tasks and time them until the last one ran: from the first
    publish, or (with ``release``: the tasks wait in the queue) from the release."""
    r.set(noop_app.COUNT_KEY, 0)
    t0 = time.time()
    for _ in range(n):
        send(noop_app.TASK, queue=noop_app.QUEUE)
    published = time.time() - t0
    if release is not None:
        t0 = time.time()
        release()
    wait_until(
        lambda: int(r.get(noop_app.COUNT_KEY) or 0) >= n,
        60 + n / 20,
        interval=0.01,
        what="no-op tasks",
    )
    wall = float(r.get(noop_app.LAST_KEY)) - t0
    return {"tasks": n, "seconds": wall, "tasks_per_s": n / wall, "publish_per_s": n / published}


# -- 3. in-flight capacity ---------------------------------------------------------------------


def bench_inflight(run: Run, concurrency: int) -> dict[str, Any]:
    c, lat = run.c, run.plan.latency
    t, k = tenant(f"inflight{concurrency}"), concurrency
    before = quiet_stats(run)
    polls0 = c.polls
    (w,), pool = run.start_turn_workers(
        1, concurrency=concurrency, latency=lat, name=f"inflight{concurrency}"
    )
    idle0 = w.cpu()
    time.sleep(2.0)
    idle_cpu = (w.cpu() - idle0) / 2.0
    c.admit_many(t, k, enqueue=False)
    samples: list[tuple[float, int, int, int, int, int]] = []
    r = run.env.redis()

    def on_sample(at: float, s: tuple[int, int, int]) -> None:
        samples.append(
            (at, s[0], s[1], s[2], proc_status(w.pid).get("Threads", 0), int(r.llen(QUEUE)))
        )  # type: ignore[arg-type]

    cpu0, t0 = w.cpu(), time.time()
    dumps = pyspy_dump_later(run, w.pid, [1.0, 2.5], f"inflight{concurrency}")
    for i in range(k):
        c.enqueue(t, f"s{i:05d}")
    ok = c.wait_terminal(t, k, timeout=60 + 4 * lat * k / 10, interval=0.05, on_sample=on_sample)
    cpu = w.cpu() - cpu0
    if dumps is not None:
        dumps[1].join(timeout=30)
    status = proc_status(w.pid)
    run.env.stop_workers()
    polls = c.polls - polls0
    after = quiet_stats(run)
    res = c.outcome(t)
    report = _inflight_report(
        concurrency,
        k,
        lat,
        ok,
        t0,
        cpu,
        idle_cpu,
        samples,
        res,
        pool,
        _delta(after, before),
        polls,
        status,
    )
    report["pyspy_dumps"] = dumps[0] if dumps is not None else None
    return report


def _inflight_report(
    concurrency: int,
    k: int,
    lat: float,
    ok: bool,
    t0: float,
    cpu: float,
    idle_cpu: float,
    samples: list[tuple[float, int, int, int, int, int]],
    res: dict[str, Any],
    pool: dict[str, Any],
    stats: dict[str, int],
    polls: int,
    status: dict[str, int],
) -> dict[str, Any]:
    running = [s for s in samples if s[1] > 0]
    if running:
        a, b = running[0][0], running[-1][0]
        mid = [s[1] for s in samples if a + (b - a) / 4 <= s[0] <= b - (b - a) / 4]
        steady = statistics.median(mid) if mid else float("nan")
    else:
        steady = float("nan")
    total = res["last_updated"] - t0 if res["last_updated"] else float("nan")
    ideal = 2 * lat
    series = [(round(s[0], 2), *s[1:]) for s in samples[:: max(1, len(samples) // 60)]]
    return {
        "concurrency": concurrency,
        "turns": k,
        "model_latency_s": lat,
        "all_terminal": ok,
        "states": res["states"],
        "pool": pool,
        "peak_running": max((s[1] for s in samples), default=0),
        "steady_running": steady,
        "seconds": total,
        "ideal_seconds": ideal,
        "overhead_s": total - ideal,
        "all_started_after_s": (res["last_started"] - t0) if res["last_started"] else None,
        "turn_latency": res["turn_latency"],
        "worker_cpu_s": cpu,
        "worker_cpu_pct_of_core": 100.0 * cpu / total,
        "worker_idle_cpu_pct_of_core": 100.0 * idle_cpu,
        "worker_cpu_ms_per_turn": 1000.0 * cpu / k,
        "peak_worker_threads": max((s[4] for s in samples), default=0),
        "peak_pg_connections": max((s[3] for s in samples), default=0),
        "worker_rss_mb": status.get("VmRSS", 0) / 1024.0,
        # the worker's transactions (its start-up scan included): all, less the K
        # admissions and the bench's own polls
        "worker_xact_commit_per_turn": (stats.get("xact_commit", 0) - polls - k) / k,
        "samples(t,running,terminal,pg_conns,threads,queue_len)": series,
    }


# -- report -------------------------------------------------------------------------------------


def _f(x: Any, digits: int = 2) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "n/a"
    if isinstance(x, float):
        return f"{x:,.{digits}f}"
    return str(x)


def ratios(res: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    pg, cm = res.get("postgres", {}), res.get("commits", {})
    raw = pg.get("raw_update_commit", {}).get("p50_ms")
    if raw:
        if "store_append" in pg:
            out["store_append_p50 / raw_commit_p50 (idle)"] = pg["store_append"]["p50_ms"] / raw
        if "store_append_in_situ" in cm:
            out["store_append_p50 in situ (16 threads) / raw_commit_p50"] = (
                cm["store_append_in_situ"]["p50_ms"] / raw
            )
    for w in (1, 2):
        turns, noop = res.get(f"turns_{w}w", {}), res.get(f"noop_{w}w", {})
        if turns.get("turns_per_s") and noop.get("tasks_per_s"):
            ws = f"{w} worker{'s' if w > 1 else ''}"
            out[f"turns/s / no-op tasks/s ({ws}, with admission)"] = (
                turns["turns_per_s"] / noop["tasks_per_s"]
            )
            if turns.get("drain", {}).get("turns_per_s") and noop.get("drain"):
                out[f"turns/s / no-op tasks/s ({ws}, draining queued work)"] = (
                    turns["drain"]["turns_per_s"] / noop["drain"]["tasks_per_s"]
                )
    single = res.get("turns_1w", {}).get("single_turn_latency", {}).get("p50_ms")
    rtt = res.get("noop_1w", {}).get("round_trip", {}).get("p50_ms")
    if single and rtt:
        out["single turn latency p50 / no-op round trip p50"] = single / rtt
    return out


def print_report(res: dict[str, Any]) -> None:
    p = print
    meta = res["meta"]
    p(
        f"\nturnkeep worker benchmarks ({'quick' if meta['quick'] else 'full'} run, "
        f"{meta['started']})"
    )
    p(
        f"host: {meta['cpus']} CPUs, Python {meta['python']}, Postgres "
        f"{meta['postgres']['server_version']} (synchronous_commit="
        f"{meta['postgres']['synchronous_commit']}, fsync={meta['postgres']['fsync']}, "
        f"max_connections={meta['postgres']['max_connections']}), bench pg connection budget "
        f"{meta['pg_connection_budget']}"
    )
    _print_baselines(res)
    _print_turns(res)
    _print_commits(res)
    _print_inflight(res)
    p("\nRatios")
    for k, v in res["ratios"].items():
        p(f"  {k:<62} {_f(v, 3)}")
    for name, r in res.items():
        if isinstance(r, dict) and "error" in r:
            p(f"\n!! {name} failed: {r['error']}")


def _print_baselines(res: dict[str, Any]) -> None:
    pg = res.get("postgres", {})
    print("\nPostgres (idle, one connection)                         p50 ms   p90 ms   p99 ms")
    for key, label in (
        ("raw_update_commit", "raw single-row UPDATE commit (psycopg autocommit)"),
        ("raw_select_1", "raw SELECT 1 round trip"),
        ("store_append", "Store.append: one fenced_append checkpoint"),
        ("store_get_turn", "Store.get_turn: one read transaction"),
    ):
        if key in pg:
            s = pg[key]
            print(
                f"  {label:<52} {_f(s['p50_ms'], 3):>7}  {_f(s['p90_ms'], 3):>7}  "
                f"{_f(s['p99_ms'], 3):>7}"
            )
    print("\nCelery no-op baseline (bench/noop_app.py: worker.app's settings, threads pool)")
    for w in (1, 2):
        r = res.get(f"noop_{w}w", {})
        if "tasks_per_s" in r:
            print(
                f"  {w} worker(s) x c{r['concurrency']}: {_f(r['tasks_per_s'], 1)} tasks/s "
                f"({r['tasks']} tasks in {_f(r['seconds'])} s; publish "
                f"{_f(r['publish_per_s'], 0)}/s; worker CPU "
                f"{_f(r['worker_cpu_ms_per_task'])} ms/task); draining {r['drain']['tasks']} "
                f"queued tasks: {_f(r['drain']['tasks_per_s'], 1)} tasks/s"
            )
        if "round_trip" in r:
            print(
                f"  round trip publish -> task ran, idle: p50 {_f(r['round_trip']['p50_ms'])}"
                f" ms, p90 {_f(r['round_trip']['p90_ms'])} ms"
            )


def _print_turns(res: dict[str, Any]) -> None:
    print("\nEnd-to-end turns (demo agent: 2 model calls + 1 tool call, zero-latency model)")
    for w in (1, 2):
        r = res.get(f"turns_{w}w", {})
        if "single_turn_latency" in r:
            s = r["single_turn_latency"]
            print(
                f"  one turn at a time, idle worker: admit -> terminal p50 {_f(s['p50_ms'])} ms,"
                f" p90 {_f(s['p90_ms'])} ms"
            )
        if "turns_per_s" in r:
            print(
                f"  {w} worker(s) x c{r['concurrency']}: {_f(r['turns_per_s'], 1)} turns/s "
                f"first admission -> last terminal; {_f(r['drain']['turns_per_s'], 1)} "
                f"turns/s draining {r['drain']['turns']} queued turns"
            )
            print(
                f"      "
                f"({r['turns']} turns in {_f(r['seconds'])} s, states {r['states']}); "
                f"admission {_f(r['admissions_per_s'], 0)}/s; turn latency p50 "
                f"{_f(r['turn_latency']['p50_ms'], 0)} ms; worker CPU "
                f"{_f(r['worker_cpu_ms_per_turn'])} ms/turn; cores busy: workers+bench "
                f"{_f(r['cpu_cores_busy'])}, whole machine {_f(r['machine_cores_busy'])}"
            )
        if r.get("pyspy"):
            _print_pyspy(r["pyspy"])


def _print_pyspy(spy: dict[str, Any]) -> None:
    print(f"  py-spy --gil on the worker ({spy['samples']} samples; {spy['file']}):")
    print("    by innermost layer: " + ", ".join(f"{n} {p}%" for n, p in spy["by_layer"]))
    print("    product functions, inclusive:")
    for name, pct in spy["product_inclusive"]:
        print(f"      {pct:5.1f}%  {name}")
    print("    self (leaf):")
    for name, pct in spy["self"]:
        print(f"      {pct:5.1f}%  {name}")


def _print_commits(res: dict[str, Any]) -> None:
    r = res.get("commits", {})
    if "turns" not in r:
        return
    print(
        f"\nCommits per step ({r['turns']} turns, {r['steps']} steps, 1 worker x c16, "
        f"zero-latency model; states {r['states']})"
    )
    d = r["pg_stat_database_delta"]
    print(
        f"  pg_stat_database.xact_commit delta {d.get('xact_commit', 0)} "
        f"(rollback {d.get('xact_rollback', 0)}, backend start-ups {d.get('sessions', 0)}) "
        f"- {r['bench_poll_transactions']} bench polls = {r['xact_commit_product']}; "
        f"unexplained by the breakdown: {r['xact_unexplained']}"
    )
    rows = [
        ("xact_commit per step", r["xact_commit_per_step"]),
        ("xact_commit per turn", r["xact_commit_per_turn"]),
        (
            "xact_commit per step without the pre-ping transactions",
            r["xact_commit_per_step_without_pings"],
        ),
        ("fenced writes per step (claim + fenced_append)", r["fenced_writes_per_step"]),
        ("fenced_append per step", r["fenced_appends_per_step"]),
        ("all writes per step (+ admission)", r["all_writes_per_step"]),
        ("read transactions per step", r["reads_per_step"]),
        (
            "worker SQL round trips per turn (ping+BEGIN+stmt+COMMIT)",
            r["worker_sql_round_trips_per_turn"],
        ),
        ("worker Redis calls per turn (publish + lease)", r["redis_calls_per_turn"]),
    ]
    for label, v in rows:
        print(f"  {label:<62} {_f(v)}")
    print("  xact_commit per turn, by what committed:")
    for k, v in r["xact_breakdown_per_turn"].items():
        print(f"      {v:6.2f}  {k}")
    print("  worker probe, per turn:")
    for k, v in r["worker_counts_per_turn"].items():
        print(f"      {v:6.2f}  {k}")
    s = r["store_append_in_situ"]
    print(
        f"  Store.append in situ under 16 threads: p50 {_f(s['p50_ms'], 3)} ms, p90 "
        f"{_f(s['p90_ms'], 3)} ms, p99 {_f(s['p99_ms'], 3)} ms"
    )


def _print_inflight(res: dict[str, Any]) -> None:
    keys = [k for k in res if k.startswith("inflight_")]
    if not keys:
        return
    print(
        "\nIn-flight capacity (1 worker process, threads pool, 1.0 s per model call = "
        "2 s of model time per turn, K = concurrency sessions)"
    )
    for key in keys:
        r = res[key]
        if "turns" not in r:
            continue
        pool = r["pool"]
        cap = (
            f"pool capped at {pool['pool_size']}(+{pool['pool_size']} overflow; product "
            f"default allows {pool['product_max_connections_per_worker']})"
            if pool["capped"]
            else f"product pool {pool['pool_size']}"
        )
        print(
            f"  c{r['concurrency']}: {r['turns']} turns, peak running {r['peak_running']}, "
            f"steady {_f(r['steady_running'], 0)}, all started after "
            f"{_f(r['all_started_after_s'])} s, total {_f(r['seconds'])} s vs ideal "
            f"{_f(r['ideal_seconds'])} s (+{_f(r['overhead_s'])} s), states {r['states']}"
        )
        print(
            f"       worker CPU {_f(r['worker_cpu_s'])} s = {_f(r['worker_cpu_pct_of_core'], 1)}"
            f"% of a core (idle {_f(r['worker_idle_cpu_pct_of_core'], 1)}%), "
            f"{_f(r['worker_cpu_ms_per_turn'])} ms/turn; peak threads "
            f"{r['peak_worker_threads']}; peak PG connections {r['peak_pg_connections']} "
            f"({cap}); worker xact_commit/turn {_f(r['worker_xact_commit_per_turn'])}; RSS "
            f"{_f(r['worker_rss_mb'], 0)} MB"
        )
        ser = r["samples(t,running,terminal,pg_conns,threads,queue_len)"]
        line = "  ".join(
            f"{t:.1f}s:{run_}/{q}" for t, run_, _, _, _, q in ser[:: max(1, len(ser) // 14)]
        )
        print(f"       running / messages still in the Redis queue, over time: {line}")
        for d in r.get("pyspy_dumps") or []:
            print(
                f"       py-spy dump at {d['at_s']} s: "
                + ", ".join(f"{n} {lab}" for lab, n in d["threads"].items())
            )


def _clean(x: Any) -> Any:
    if isinstance(x, float) and (math.isnan(x) or math.isinf(x)):
        return None
    if isinstance(x, dict):
        return {str(k): _clean(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [_clean(v) for v in x]
    return x


# -- main ----------------------------------------------------------------------------------------


def _scenarios(run: Run) -> list[tuple[str, Callable[[], dict[str, Any]]]]:
    items: list[tuple[str, Callable[[], dict[str, Any]]]] = [
        ("postgres", lambda: bench_postgres(run)),
        ("commits", lambda: bench_commits(run)),
        ("turns_1w", lambda: bench_turns(run, 1)),
        ("turns_2w", lambda: bench_turns(run, 2)),
        ("noop_1w", lambda: bench_noop(run, 1)),
        ("noop_2w", lambda: bench_noop(run, 2)),
    ]
    for conc in run.plan.inflight:
        items.append((f"inflight_{conc}", lambda conc=conc: bench_inflight(run, conc)))
    only = set(run.args.only or [])
    return [(k, f) for k, f in items if not only or any(k.startswith(o) for o in only)]


def _on_signal(signum: int, frame: Any) -> None:
    raise SystemExit(f"signal {signum}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="smaller counts (about a minute)")
    ap.add_argument("--redis-db", type=int, default=13, help="dedicated Redis db (flushed)")
    ap.add_argument(
        "--pg-conn-budget",
        type=int,
        default=60,
        help="most Postgres connections the bench's workers may open",
    )
    ap.add_argument(
        "--no-pg-cap",
        action="store_true",
        help="keep the product's pool sizing even past the budget",
    )
    ap.add_argument(
        "--py-spy",
        action="store_true",
        help="profile the 1-worker turns/s run with py-spy (if installed)",
    )
    ap.add_argument("--only", nargs="*", help="run only scenarios whose name starts so")
    ap.add_argument("--keep-logs", action="store_true")
    args = ap.parse_args(argv)
    # SIGTERM, and SIGINT even where a non-interactive shell started us with it ignored:
    # unwind through the finally below, which stops the workers and drops the database
    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGINT, _on_signal)
    run = Run(args)
    results: dict[str, Any] = {}
    try:
        facts = server_facts()
        headroom = int(facts["max_connections"]) - int(facts["connections_in_use"]) - 20
        run.cap = PoolCap(max(6, min(args.pg_conn_budget, headroom)), not args.no_pg_cap)
        results["meta"] = {
            "started": run.stamp,
            "quick": args.quick,
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "postgres": facts,
            "pg_connection_budget": run.cap.budget if run.cap.enabled else None,
            "redis_db": args.redis_db,
            "plan": vars(run.plan),
        }
        run.env.setup()
        run.client = Client(run.env)
        for name, fn in _scenarios(run):
            print(f"-- {name} ...", file=sys.stderr, flush=True)
            t0 = time.monotonic()
            try:
                results[name] = fn()
            except Exception as exc:  # report it and go on with the next scenario
                run.env.failed = True
                traceback.print_exc()
                print(run.env.tail_logs(), file=sys.stderr)
                results[name] = {"error": f"{type(exc).__name__}: {exc}"}
                run.env.stop_workers()
            print(f"   {name} took {time.monotonic() - t0:.1f} s", file=sys.stderr, flush=True)
    finally:
        if run.client is not None:
            run.client.close()
        run.env.close()
    results["ratios"] = ratios(results)
    print_report(results)
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"workers-{run.stamp}.json"
    path.write_text(json.dumps(_clean(results), indent=2, default=str))
    print(f"\nwrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
