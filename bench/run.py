"""turnkeep benchmarks: every headline figure from one run, on this machine.

    .venv/bin/python -m bench            # full run (about 2-4 minutes)
    .venv/bin/python -m bench --quick    # smaller counts (about 1.5 minutes)

A harness, not a test: it never gates CI. It creates its own Postgres databases
(dropped at the end, also on error or Ctrl-C), uses a dedicated Redis db (flushed at
start and end), starts real ``celery -A turnkeep.worker.app worker`` / ``beat`` and ``uvicorn
turnkeep.api.app:app`` processes, prints a table (figure, value, goal, met) and writes the
figures to bench/results/latest.json. See bench/README.md.
"""

from __future__ import annotations

import argparse
import os
import platform
import signal
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make the repo importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import report
from bench.client import Client
from bench.context import RESULTS, PoolCap, Run
from bench.harness import ROOT, server_facts
from bench.scenarios import (
    admission,
    append,
    chat,
    commits,
    erasure,
    fairness,
    inflight,
    long_session,
    noop,
    parallel,
    peers,
    postgres,
    recovery,
    redis_commands,
    search,
    turns,
)

Scenario = Callable[[Run], dict[str, Any]]

#: in this order; ``commits`` only with --breakdown
ORDER: list[tuple[str, Scenario]] = [
    ("postgres", postgres.run),
    ("admission", admission.run),
    ("append", append.run),
    ("noop", noop.run),
    ("turns", turns.run),
    ("commits", commits.run),
    ("redis", redis_commands.run),
    ("inflight", inflight.run),
    ("recovery", recovery.run),
    ("long_session", long_session.run),
    ("chat", chat.run),
    ("peers", peers.run),
    ("parallel", parallel.run),
    ("erasure", erasure.run),
    ("search", search.run),
    ("fairness", fairness.run),
]


def parse(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python -m bench", description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="smaller counts (about 1.5 minutes)")
    ap.add_argument(
        "--only",
        nargs="+",
        choices=[name for name, _ in ORDER],
        help="run only these scenarios (a ratio needs both of its figures); the "
        "figures go to only-<stamp>.json, latest.json is left alone",
    )
    ap.add_argument(
        "--py-spy",
        action="store_true",
        help="profile the worker over an extra drain, and dump its threads in flight "
        "(needs .venv/bin/pip install py-spy)",
    )
    ap.add_argument(
        "--breakdown",
        action="store_true",
        help="also count the worker's statements by name with bench/probe.py",
    )
    ap.add_argument("--redis-db", type=int, default=13, help="dedicated Redis db (flushed)")
    ap.add_argument(
        "--pg-conn-budget",
        type=int,
        default=60,
        help="most Postgres connections the bench's workers may open at once",
    )
    ap.add_argument(
        "--no-pg-cap", action="store_true", help="keep the product's pool size past the budget"
    )
    ap.add_argument("--keep-logs", action="store_true", help="keep the processes' log files")
    return ap.parse_args(argv)


def selected(args: argparse.Namespace) -> list[tuple[str, Scenario]]:
    names = set(args.only or [n for n, _ in ORDER if n != "commits" or args.breakdown])
    return [(n, fn) for n, fn in ORDER if n in names]


def _on_signal(signum: int, frame: Any) -> None:
    raise SystemExit(f"signal {signum}")


def run_all(r: Run, details: dict[str, Any]) -> bool:
    """Every selected scenario in order; a failed one is reported and the rest go on."""
    ok = True
    for name, fn in selected(r.args):
        print(f"-- {name} ...", file=sys.stderr, flush=True)
        t0 = time.monotonic()
        try:
            details[name] = fn(r)
        except Exception as exc:
            ok = False
            r.env.failed = True
            traceback.print_exc()
            print(r.env.tail_logs(), file=sys.stderr)
            details[name] = {"error": f"{type(exc).__name__}: {exc}"}
        finally:
            r.env.stop_all()
        took = time.monotonic() - t0
        details.setdefault("seconds", {})[name] = round(took, 1)
        print(f"   {name} took {took:.1f} s", file=sys.stderr, flush=True)
    return ok


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    # SIGTERM, and SIGINT even where a non-interactive shell started us with it ignored:
    # unwind through the finally below, which stops the processes and drops the databases
    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGINT, _on_signal)
    r = Run(args)
    details: dict[str, Any] = {}
    t0 = time.monotonic()
    try:
        facts = server_facts()
        headroom = int(facts["max_connections"]) - int(facts["connections_in_use"]) - 20
        r.cap = PoolCap(max(6, min(args.pg_conn_budget, headroom)), not args.no_pg_cap)
        details["meta"] = {
            "started": r.stamp,
            "quick": args.quick,
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "postgres": facts,
            "pg_connection_budget": r.cap.budget if r.cap.enabled else None,
            "redis_db": args.redis_db,
            "plan": vars(r.plan),
            "loadavg_at_start": os.getloadavg(),
        }
        r.env.setup()
        r.client = Client(r.env)
        ok = run_all(r, details)
    finally:
        if r.client is not None:
            r.client.close()
        r.env.close()
    figures = report.with_ratios(r.figures)
    figures["quick"] = 1.0 if args.quick else 0.0
    figures["bench_seconds"] = time.monotonic() - t0
    meta = details["meta"]
    meta["loadavg_at_end"] = os.getloadavg()
    pg = meta["postgres"]
    print(
        f"\nturnkeep bench ({'quick' if args.quick else 'full'} run {r.stamp}; "
        f"{meta['cpus']} CPUs, Python {meta['python']}, Postgres {pg['server_version']} "
        f"synchronous_commit={pg['synchronous_commit']} fsync={pg['fsync']}; load average "
        f"{meta['loadavg_at_start'][0]:.2f} at start, {meta['loadavg_at_end'][0]:.2f} at end)\n"
    )
    if meta["loadavg_at_start"][0] > 0.5:
        print("!! the machine was busy before the bench started: figures will be noisy\n")
    print("\n".join(report.table(figures)))
    print()
    print("\n".join(report.details_lines(details)))
    path = report.write(RESULTS, figures, details, r.stamp, partial=bool(args.only))
    print(f"\nwrote {path.relative_to(ROOT)} (details: bench/results/run-{r.stamp}.json)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
