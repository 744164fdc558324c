"""The benchmark environment: a temporary Postgres database, a dedicated Redis db,
real ``celery worker`` processes, and what /proc says about them.

Everything started here is stopped by ``BenchEnv.close()`` (process groups are
killed if a worker ignores SIGTERM) and the database is dropped, so callers wrap a
whole run in ``try/finally``. Every wait is bounded in time.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg
import redis

ROOT = Path(__file__).resolve().parent.parent
CELERY = str(Path(sys.executable).with_name("celery"))
PG_ADMIN = os.environ.get("BENCH_PG", "postgresql://postgres@127.0.0.1:5432/postgres")
REDIS_BASE = os.environ.get("BENCH_REDIS", "redis://127.0.0.1:6379")
CLK_TCK = os.sysconf("SC_CLK_TCK")
TERMINAL = ("completed", "failed", "cancelled")


def wait_until(
    pred: Callable[[], Any], timeout: float, interval: float = 0.05, what: str = "condition"
) -> Any:
    """Poll ``pred`` until truthy; TimeoutError after ``timeout`` seconds."""
    end = time.monotonic() + timeout
    while True:
        value = pred()
        if value:
            return value
        if time.monotonic() > end:
            raise TimeoutError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(interval)


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100); NaN for no values."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    k = max(0, min(len(ordered) - 1, round(q / 100.0 * (len(ordered) - 1))))
    return ordered[k]


def summary_ms(seconds: Sequence[float]) -> dict[str, float]:
    """p50/p90/p99/mean in milliseconds of durations given in seconds."""
    ms = [s * 1000.0 for s in seconds]
    return {
        "n": len(ms),
        "p50_ms": percentile(ms, 50),
        "p90_ms": percentile(ms, 90),
        "p99_ms": percentile(ms, 99),
        "mean_ms": statistics.fmean(ms) if ms else float("nan"),
    }


# -- /proc ----------------------------------------------------------------------


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process (all its threads), in seconds; NaN if it is gone."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return float("nan")
    fields = raw.rsplit(")", 1)[1].split()
    # fields[0] is the state (field 3 of proc(5)); utime and stime are fields 14 and 15
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def system_cpu() -> tuple[float, float]:
    """(busy, total) CPU seconds of the whole machine since boot, from /proc/stat."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle + iowait
    total = sum(fields[:8])
    return (total - idle) / CLK_TCK, total / CLK_TCK


def proc_status(pid: int) -> dict[str, int]:
    """Threads and VmRSS (kB) of a process; empty if it is gone."""
    out: dict[str, int] = {}
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            key, _, value = line.partition(":")
            if key in ("Threads", "VmRSS"):
                out[key] = int(value.split()[0])
    except OSError:
        pass
    return out


# -- processes --------------------------------------------------------------------


@dataclass
class Worker:
    """One ``celery worker`` process in its own process group."""

    name: str
    popen: subprocess.Popen[bytes]
    log: Path

    @property
    def pid(self) -> int:
        return self.popen.pid

    def alive(self) -> bool:
        return self.popen.poll() is None

    def text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def cpu(self) -> float:
        return cpu_seconds(self.pid)

    def stop(self, timeout: float = 20.0) -> None:
        """SIGTERM (Celery's warm shutdown), then SIGKILL the whole group."""
        if self.alive():
            try:
                self.popen.send_signal(signal.SIGTERM)
                self.popen.wait(timeout=timeout)
            except (subprocess.TimeoutExpired, OSError):
                pass
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signal.SIGKILL)  # the group is ours: start_new_session
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.popen.wait(timeout=5)


@dataclass
class BenchEnv:
    """A temporary database, a flushed Redis db and the processes of one bench run."""

    redis_db: int = 13
    keep_logs: bool = False
    dbname: str = field(default_factory=lambda: f"turnkeep_bench_{uuid.uuid4().hex[:10]}")
    logdir: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="tk-bench-")))
    workers: list[Worker] = field(default_factory=list)
    created_db: bool = False
    failed: bool = False

    # -- urls --
    @property
    def pg_url(self) -> str:
        """libpq url of the bench database (psycopg)."""
        return PG_ADMIN.rsplit("/", 1)[0] + "/" + self.dbname

    @property
    def sa_url(self) -> str:
        """SQLAlchemy url of the bench database, as TURNKEEP_DATABASE_URL wants it."""
        return self.pg_url.replace("postgresql://", "postgresql+psycopg://", 1)

    @property
    def redis_url(self) -> str:
        return f"{REDIS_BASE}/{self.redis_db}"

    def redis(self) -> redis.Redis:
        return redis.Redis.from_url(self.redis_url)

    # -- lifecycle --
    def setup(self) -> None:
        from store.migrate import upgrade

        self.redis().flushdb()
        with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{self.dbname}"')
        self.created_db = True
        upgrade(self.sa_url)

    def close(self) -> None:
        for w in reversed(self.workers):
            w.stop()
        self.workers.clear()
        if self.created_db:
            try:
                with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
                    conn.execute(f'DROP DATABASE IF EXISTS "{self.dbname}" WITH (FORCE)')
                self.created_db = False
            except psycopg.Error as exc:
                print(f"!! could not drop {self.dbname}: {exc}", file=sys.stderr)
        with contextlib.suppress(redis.RedisError):
            self.redis().flushdb()
        if self.failed or self.keep_logs:
            print(f"worker logs kept in {self.logdir}", file=sys.stderr)
        else:
            shutil.rmtree(self.logdir, ignore_errors=True)

    # -- workers --
    def base_env(self) -> dict[str, str]:
        return {
            "TURNKEEP_DATABASE_URL": self.sa_url,
            "TURNKEEP_REDIS_URL": self.redis_url,
            "TURNKEEP_AGENTS": "runtime.demo",
            # no model provider is ever reached from a bench
            "TURNKEEP_OPENAI_BASE_URL": "http://127.0.0.1:9/v1",
            "TURNKEEP_ANTHROPIC_BASE_URL": "http://127.0.0.1:9",
        }

    def start_worker(
        self,
        *,
        app: str = "worker.app",
        concurrency: int,
        env: dict[str, str] | None = None,
        include: str | None = None,
        name: str = "worker",
        ready_timeout: float = 60.0,
    ) -> Worker:
        full_env = {**os.environ, **self.base_env(), **(env or {})}
        full_env["PYTHONPATH"] = str(ROOT)
        n = len(self.workers)
        argv = [
            CELERY,
            "-A",
            app,
            "worker",
            "-l",
            "INFO",
            "--pool",
            "threads",
            "-c",
            str(concurrency),
            "-n",
            f"{name}{n}-{os.getpid()}@%h",
            "--without-gossip",
            "--without-mingle",
        ]
        if include:
            argv += ["-I", include]
        log = self.logdir / f"{name}-{n}.log"
        with log.open("wb") as fh:
            popen = subprocess.Popen(
                argv,
                cwd=ROOT,
                env=full_env,
                stdout=fh,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        w = Worker(name, popen, log)
        self.workers.append(w)
        try:
            wait_until(
                lambda: " ready." in w.text() or not w.alive(),
                ready_timeout,
                interval=0.1,
                what=f"{name} ready",
            )
        except TimeoutError:
            self.failed = True
            raise
        if not w.alive():
            self.failed = True
            raise RuntimeError(f"{name} exited at start:\n{w.text()[-3000:]}")
        return w

    def stop_workers(self) -> None:
        for w in reversed(self.workers):
            w.stop()
        self.workers.clear()

    def tail_logs(self, lines: int = 30) -> str:
        out = []
        for w in self.workers:
            text = "\n".join(w.text().splitlines()[-lines:])
            out.append(f"===== {w.name} pid={w.pid} log={w.log}\n{text}")
        return "\n".join(out)


# -- Postgres statistics --------------------------------------------------------------


def db_stats(dbname: str) -> dict[str, int]:
    """pg_stat_database counters of one database, read from the admin database so
    that reading them adds no transaction to the database measured."""
    with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
        conn.execute("SELECT pg_stat_clear_snapshot()")
        row = conn.execute(
            "SELECT xact_commit, xact_rollback, sessions, tup_inserted, tup_updated"
            " FROM pg_stat_database WHERE datname = %s",
            (dbname,),
        ).fetchone()
    assert row is not None, dbname
    keys = ("xact_commit", "xact_rollback", "sessions", "tup_inserted", "tup_updated")
    return dict(zip(keys, (int(x) for x in row), strict=True))


def settled_stats(dbname: str, *, quiet: float = 1.3, timeout: float = 12.0) -> dict[str, int]:
    """Counters once they stopped moving for ``quiet`` seconds.

    Each backend flushes its counters to the shared statistics at most once a second
    (and when it goes idle), so a read right after a burst can miss the tail of it.
    """
    end = time.monotonic() + timeout
    last = db_stats(dbname)
    while time.monotonic() < end:
        time.sleep(quiet)
        now = db_stats(dbname)
        if now == last:
            return now
        last = now
    return last


def server_facts() -> dict[str, Any]:
    with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
        facts = {
            name: conn.execute(f"SHOW {name}").fetchone()[0]  # type: ignore[index]
            for name in (
                "server_version",
                "max_connections",
                "synchronous_commit",
                "fsync",
                "shared_buffers",
            )
        }
        facts["connections_in_use"] = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend'"
        ).fetchone()[0]  # type: ignore[index]
    return facts
