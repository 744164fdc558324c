"""Peers in the same run (issue 23): the same K-step no-op job on LangGraph with its
Postgres checkpointer and on DBOS, one run at a time. Each peer runs as a subprocess
(bench/peers/) against a database of its own, created here and dropped by
``BenchEnv.close``. ms per durable step is the least-squares slope of wall time per
run over K, so a run's fixed cost is not charged to its steps. Needs the ``bench``
extra; without it the scenario says it was not run."""

from __future__ import annotations

import importlib.util
import json
import statistics
import subprocess
import sys
import time
import uuid
from typing import Any

import psycopg

from bench.context import Run
from bench.harness import PG_ADMIN, ROOT, server_transactions, settled_stats

KS = (1, 5, 20)
PEERS = {"langgraph": "bench.peers.langgraph_job", "dbos": "bench.peers.dbos_job"}
NEEDS = ("langgraph", "langgraph.checkpoint.postgres", "dbos")
NOT_RUN = {"not_run": "install the bench extra: .venv/bin/pip install -e '.[bench]'"}


def installed() -> bool:
    try:
        return all(importlib.util.find_spec(m) is not None for m in NEEDS)
    except ModuleNotFoundError:
        return False


def slope(xs: list[float], ys: list[float]) -> float:
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum(
        (x - mx) ** 2 for x in xs
    )


def own_database(r: Run, peer: str) -> str:
    dbname = f"bench_peer_{peer}_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{dbname}"')
    r.env.databases.append(dbname)
    return PG_ADMIN.rsplit("/", 1)[0] + "/" + dbname


def run_peer(r: Run, peer: str, runs: int) -> dict[str, Any]:
    dsn = own_database(r, peer)
    ks = ",".join(str(k) for k in KS)
    proc = subprocess.run(
        [sys.executable, "-m", PEERS[peer], dsn, "--ks", ks, "--runs", str(runs)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if proc.returncode != 0:
        return {"error": proc.stderr.strip().splitlines()[-5:]}
    raw = json.loads(proc.stdout.strip().splitlines()[-1])
    xs = [float(k) for k in KS for _ in raw[str(k)]["walls"]]
    ys = [w for k in KS for w in raw[str(k)]["walls"]]
    steps = runs * sum(KS)
    return {
        "step_ms": 1000.0 * slope(xs, ys),
        "run_p50_ms": {k: 1000.0 * statistics.median(raw[str(k)]["walls"]) for k in KS},
        # pg_stat_database of the peer's own database: every commit in it, the peer's
        # background pollers too
        "commits_per_step": sum(raw[str(k)]["commits"] for k in KS) / steps,
        "cpu_ms_per_step": 1000.0 * sum(raw[str(k)]["cpu"] for k in KS) / steps,
    }


def turnkeep(r: Run, runs: int) -> dict[str, Any]:
    """Turns of 2N + 1 steps (N in 0, 2, 10: 1, 5, 21 steps), admit -> terminal, one
    at a time on a real worker; the slope over steps leaves the queue hop out."""
    from turnkeep.runtime.agents.registry import load_agents

    agent = load_agents("bench.agents").get("ksteps")
    r.c.disconnect()
    before = settled_stats(r.env.dbname, quiet=0.5)
    polls0, turns, all_steps = r.c.polls, 0, 0.0
    w, _ = r.start_turn_worker(
        concurrency=1, latency=0.0, name="peers", TURNKEEP_AGENTS="bench.agents"
    )
    t = r.tenant("peers")
    h = agent.definition_hash
    xs: list[float] = []
    ys: list[float] = []
    try:
        cpu0 = w.cpu()
        for n in (0, 2, 10):
            for i in range(runs + 1):
                t0 = time.perf_counter()
                session = r.admit_turn(t, "ksteps", h, f"steps {n}")
                if not r.c.wait_turn(t, session):
                    raise RuntimeError("a K-step turn did not finish in 30 s")
                turns, all_steps = turns + 1, all_steps + 2 * n + 1
                if i:  # the first of each N is a warm-up
                    xs.append(2.0 * n + 1)
                    ys.append(time.perf_counter() - t0)
        cpu_s = w.cpu() - cpu0
    finally:
        r.env.stop(w)  # its backends exit, and flush their counts
    polls = r.c.polls - polls0
    r.c.disconnect()
    xacts = server_transactions(settled_stats(r.env.dbname, quiet=0.5)) - server_transactions(
        before
    )
    return {
        "step_ms": 1000.0 * slope(xs, ys),
        "turn_p50_ms": {
            int(x): 1000.0 * statistics.median([y for xx, y in zip(xs, ys, strict=True) if xx == x])
            for x in sorted(set(xs))
        },
        # warm-up turns and the worker's start-up included; less the bench's polls
        # and admissions
        "worker_cpu_ms_per_step": 1000.0 * cpu_s / all_steps,
        "worker_xacts_per_step": (xacts - polls - turns) / all_steps,
    }


def run(r: Run) -> dict[str, Any]:
    if not installed():
        return dict(NOT_RUN)
    runs = 10 if r.plan.quick else 30
    out: dict[str, Any] = {"ks": list(KS), "runs_per_k": runs}
    for peer in PEERS:
        res = run_peer(r, peer, runs)
        out[peer] = res
        if "step_ms" in res:
            r.figures[f"peer_{peer}_step_ms"] = res["step_ms"]
    try:
        out["turnkeep"] = turnkeep(r, runs)
        r.figures["turnkeep_step_ms"] = out["turnkeep"]["step_ms"]
    except (RuntimeError, TimeoutError) as exc:
        out["turnkeep"] = {"error": str(exc)}
    if "raw_commit_p50_ms" in r.figures:
        out["raw_commit_p50_ms"] = r.figures["raw_commit_p50_ms"]
    return out
