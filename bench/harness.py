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
import socket
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
class Proc:
    """One process the bench started (a worker, beat, the API), in its own process
    group."""

    name: str
    popen: subprocess.Popen[bytes]
    log: Path
    #: the Celery node name (``-n``) of a worker, as its events carry it
    nodename: str = ""

    @property
    def pid(self) -> int:
        return self.popen.pid

    def alive(self) -> bool:
        return self.popen.poll() is None

    def text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def cpu(self) -> float:
        return cpu_seconds(self.pid)

    def kill(self) -> None:
        """SIGKILL the whole process group at once (a crash, as far as Celery knows)."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.popen.wait(timeout=5)

    def stop(self, timeout: float = 20.0) -> None:
        """A worker: SIGKILL. The bench stops a worker only once its tasks ended (or no
        longer matter), and Celery's warm and cold shutdowns alike wait out the
        product's 10 s soft shutdown even when idle; its Postgres backends see the
        connection close and exit, flushing their statistics. Anything else: SIGTERM,
        then SIGKILL of the whole group after ``timeout``."""
        if self.alive() and not self.nodename:
            try:
                self.popen.send_signal(signal.SIGTERM)
                self.popen.wait(timeout=timeout)
            except (subprocess.TimeoutExpired, OSError):
                pass
        self.kill()


Worker = Proc  # the name most scenarios read better with


def pg_url_of(dbname: str) -> str:
    """libpq url of a database on the bench's Postgres."""
    return PG_ADMIN.rsplit("/", 1)[0] + "/" + dbname


def sa_url_of(dbname: str) -> str:
    """The same in Alembic's SQLAlchemy form, as the owner (TURNKEEP_MIGRATE_URL)."""
    return pg_url_of(dbname).replace("postgresql://", "postgresql+psycopg://", 1)


def app_url_of(dbname: str) -> str:
    """The same as the application's role, ``turnkeep_app`` (TURNKEEP_DATABASE_URL): the
    processes a bench measures run under row-level security, as deployed."""
    from turnkeep.runtime.settings import APP_ROLE

    scheme, rest = sa_url_of(dbname).split("://", 1)
    return f"{scheme}://{APP_ROLE}@{rest.rsplit('@', 1)[-1]}"


@dataclass
class BenchEnv:
    """Temporary databases, a flushed Redis db and the processes of one bench run."""

    redis_db: int = 13
    keep_logs: bool = False
    dbname: str = field(default_factory=lambda: f"turnkeep_bench_{uuid.uuid4().hex[:10]}")
    logdir: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="tk-bench-")))
    procs: list[Proc] = field(default_factory=list)
    databases: list[str] = field(default_factory=list)
    failed: bool = False
    _seq: int = 0

    # -- urls --
    @property
    def pg_url(self) -> str:
        """libpq url of the bench database (psycopg)."""
        return pg_url_of(self.dbname)

    @property
    def sa_url(self) -> str:
        """SQLAlchemy url of the bench database, as TURNKEEP_DATABASE_URL wants it."""
        return sa_url_of(self.dbname)

    @property
    def redis_url(self) -> str:
        return f"{REDIS_BASE}/{self.redis_db}"

    def redis(self) -> redis.Redis:
        return redis.Redis.from_url(self.redis_url)

    @property
    def workers(self) -> list[Proc]:
        return [p for p in self.procs if p.nodename]

    # -- lifecycle --
    def setup(self) -> None:
        self.redis().flushdb()
        self.create_database(self.dbname)

    def create_database(self, dbname: str) -> None:
        """Create and migrate a database that ``close`` drops."""
        from turnkeep.store.migrate import upgrade

        with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{dbname}"')
        self.databases.append(dbname)
        upgrade(sa_url_of(dbname))

    def close(self) -> None:
        self.stop_all()
        for dbname in self.databases:
            try:
                with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
                    conn.execute(f'DROP DATABASE IF EXISTS "{dbname}" WITH (FORCE)')
            except psycopg.Error as exc:
                print(f"!! could not drop {dbname}: {exc}", file=sys.stderr)
        self.databases.clear()
        with contextlib.suppress(redis.RedisError):
            self.redis().flushdb()
        if self.failed or self.keep_logs:
            print(f"process logs kept in {self.logdir}", file=sys.stderr)
        else:
            shutil.rmtree(self.logdir, ignore_errors=True)

    # -- processes --
    def base_env(self) -> dict[str, str]:
        return {
            "TURNKEEP_DATABASE_URL": app_url_of(self.dbname),
            "TURNKEEP_MIGRATE_URL": self.sa_url,
            "TURNKEEP_REDIS_URL": self.redis_url,
            "TURNKEEP_AGENTS": "turnkeep.runtime.demo",
            # no model provider is ever reached from a bench
            "TURNKEEP_OPENAI_BASE_URL": "http://127.0.0.1:9/v1",
            "TURNKEEP_ANTHROPIC_BASE_URL": "http://127.0.0.1:9",
        }

    def spawn(
        self, argv: list[str], *, name: str, env: dict[str, str] | None = None, nodename: str = ""
    ) -> Proc:
        """Start a process in its own group, its output in a log file of its own."""
        full_env = {**os.environ, **self.base_env(), **(env or {})}
        full_env["PYTHONPATH"] = str(ROOT)
        self._seq += 1
        log = self.logdir / f"{name}-{self._seq}.log"
        with log.open("wb") as fh:
            popen = subprocess.Popen(
                argv,
                cwd=ROOT,
                env=full_env,
                stdout=fh,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        proc = Proc(name, popen, log, nodename)
        self.procs.append(proc)
        return proc

    def wait_log(self, proc: Proc, needle: str, timeout: float = 60.0) -> None:
        """Wait until ``needle`` shows in the process's log; RuntimeError if it exits."""
        try:
            wait_until(
                lambda: needle in proc.text() or not proc.alive(),
                timeout,
                interval=0.1,
                what=f"{proc.name}: {needle.strip()!r}",
            )
        except TimeoutError:
            self.failed = True
            raise
        if not proc.alive():
            self.failed = True
            raise RuntimeError(f"{proc.name} exited at start:\n{proc.text()[-3000:]}")

    def start_worker(
        self,
        *,
        app: str = "turnkeep.worker.app",
        concurrency: int,
        env: dict[str, str] | None = None,
        include: str | None = None,
        name: str = "worker",
        ready_timeout: float = 60.0,
        task_events: bool = False,
    ) -> Proc:
        """``celery -A app worker --pool threads -c C``, waited for until ready; with
        ``task_events``, sending Celery's task events as it does once a monitor (Flower)
        asked for them."""
        nodename = f"{name}{self._seq + 1}-{os.getpid()}@{socket.gethostname()}"
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
            nodename,
            "--without-gossip",
            "--without-mingle",
        ]
        if task_events:
            argv.append("--task-events")
        if include:
            argv += ["-I", include]
        w = self.spawn(argv, name=name, env=env, nodename=nodename)
        self.wait_log(w, " ready.", ready_timeout)
        return w

    def start_beat(self, env: dict[str, str] | None = None) -> Proc:
        """``celery -A turnkeep.worker.app beat`` with its schedule file in the log directory."""
        argv = [
            CELERY,
            "-A",
            "turnkeep.worker.app",
            "beat",
            "-l",
            "INFO",
            "-s",
            str(self.logdir / f"beat-schedule-{self._seq}"),
        ]
        beat = self.spawn(argv, name="beat", env=env)
        self.wait_log(beat, "beat: Starting...", 60.0)
        return beat

    def stop(self, proc: Proc) -> None:
        proc.stop()
        if proc in self.procs:
            self.procs.remove(proc)

    def stop_all(self) -> None:
        for p in reversed(list(self.procs)):
            p.stop()
        self.procs.clear()

    def tail_logs(self, lines: int = 30) -> str:
        out = []
        for p in self.procs:
            text = "\n".join(p.text().splitlines()[-lines:])
            out.append(f"===== {p.name} pid={p.pid} log={p.log}\n{text}")
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


#: how long a live backend may hold its statistics back (PGSTAT_IDLE_INTERVAL): it
#: flushes at most once a second while busy, and 10 s after it went idle with counts
#: pending; a backend that exits flushes at once
PGSTAT_IDLE_INTERVAL = 10.0


def server_transactions(stats: dict[str, int]) -> int:
    """xact_commit + xact_rollback: every autocommit statement is one of them."""
    return stats["xact_commit"] + stats["xact_rollback"]


def freeze_for_counting(pg_url: str) -> dict[str, Any]:
    """Make a database's transaction counters move only for its clients: ANALYZE now
    (good plans without autoanalyze) and turn autovacuum off for its tables, whose
    workers' transactions would count too. Run before a counting window, on a
    connection closed before it opens."""
    with psycopg.connect(pg_url, autocommit=True) as conn:
        autovacuum = conn.execute("SHOW autovacuum").fetchone()[0]  # type: ignore[index]
        tables = [
            r[0]
            for r in conn.execute(
                "SELECT format('%I.%I', schemaname, tablename) FROM pg_tables"
                " WHERE schemaname NOT IN ('pg_catalog', 'information_schema')"
            ).fetchall()
        ]
        if autovacuum == "on":
            for t in tables:
                conn.execute(f"ALTER TABLE {t} SET (autovacuum_enabled = off)")
        conn.execute("ANALYZE")
    return {"server_autovacuum": autovacuum, "tables": len(tables)}
