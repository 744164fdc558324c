"""What every peer script shares: arguments, the timed loop and its JSON answer."""

from __future__ import annotations

import argparse
import json
import resource
import time
from collections.abc import Callable

import psycopg


def args() -> argparse.Namespace:
    p = argparse.ArgumentParser()
    p.add_argument("dsn")
    p.add_argument("--ks", default="1,5,20")
    p.add_argument("--runs", type=int, default=10)
    return p.parse_args()


def commits(dsn: str) -> int:
    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute(
            "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()"
        ).fetchone()
    assert row is not None
    return int(row[0])


def cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def measure(dsn: str, ks: list[int], runs: int, job: Callable[[int], None]) -> None:
    """Times ``runs`` runs of ``job(k)`` for each k after one warm-up run; prints
    wall seconds per run, commits and CPU seconds per k as one JSON line."""
    out: dict[str, dict[str, float | list[float]]] = {}
    for k in ks:
        job(k)
        # pg_stat_database lags by up to PGSTAT_MIN_INTERVAL; the flush forces it
        time.sleep(1.1)
        c0, t_cpu = commits(dsn), cpu()
        walls = []
        for _ in range(runs):
            t0 = time.perf_counter()
            job(k)
            walls.append(time.perf_counter() - t0)
        cpu_s = cpu() - t_cpu
        time.sleep(1.1)
        # the reading connection's own commit is not the job's
        out[str(k)] = {"walls": walls, "commits": commits(dsn) - c0 - 1, "cpu": cpu_s}
    print(json.dumps(out))
