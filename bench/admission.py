"""Admission latency over HTTP against a raw Postgres commit, measured in the same run.

    .venv/bin/python bench/admission.py [--n 1000] [--warmup 50]

Creates a temporary database (migrated with ``store.migrate.upgrade``), starts a real
``uvicorn api.app:app`` process on a free port, and on one keep-alive connection
sends ``n`` sequential admissions (each a new session, a 202), timing each request.
In the same run, on the same Postgres, it times ``n`` raw single-row ``UPDATE``
commits (psycopg, autocommit), and prints p50/p95/p99 of both and the p50 ratio.

The API enqueues each admitted session on its own Redis database (``--redis-db``);
no worker consumes it, and the bench removes its messages at the end. The server's
agents module is this file (``AGENTS`` below), so the bench needs no other module.
Environment: ``BENCH_PG`` (an admin URL), ``BENCH_REDIS`` (a Redis URL without db).
Never a test.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from runtime.definitions import AgentDefinition  # noqa: E402

PG_ADMIN = os.environ.get("BENCH_PG", "postgresql://postgres@127.0.0.1:5432/postgres")
REDIS_BASE = os.environ.get("BENCH_REDIS", "redis://127.0.0.1:6379")

#: the server's agents module is this file: TURNKEEP_AGENTS=bench.admission
AGENTS = [
    AgentDefinition(
        name="bench",
        version="1",
        provider="demo",
        model="demo-weather",
        instructions="Answer in one sentence.",
    )
]


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile, q in 0..100."""
    ordered = sorted(values)
    rank = max(1, min(len(ordered), round(q / 100 * len(ordered) + 0.5)))
    return ordered[rank - 1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def sqlalchemy_url(admin: str, dbname: str) -> str:
    base = admin.rsplit("/", 1)[0].replace("postgresql://", "postgresql+psycopg://", 1)
    return f"{base}/{dbname}"


def start_server(env: dict[str, str], port: int) -> subprocess.Popen[bytes]:
    cmd = [
        sys.executable,
        "-m",
        "uvicorn",
        "api.app:app",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--log-level",
        "warning",
        "--no-access-log",
    ]
    return subprocess.Popen(cmd, cwd=ROOT, env=env, start_new_session=True)


def wait_ready(url: str, proc: subprocess.Popen[bytes], timeout: float = 30) -> None:
    import httpx

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the API server exited with {proc.returncode}")
        try:
            if httpx.get(f"{url}/readyz", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise TimeoutError("the API server was not ready in time")


def stop_server(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(5)


def time_admissions(url: str, token: str, tenant_tag: str, n: int, warmup: int) -> list[float]:
    import httpx

    headers = {"Authorization": f"Bearer {token}"}
    samples: list[float] = []
    with httpx.Client(base_url=url, headers=headers, timeout=30) as client:
        for i in range(warmup + n):
            body = {
                "agent": "bench",
                "input": [{"role": "user", "content": f"Weather in city {i}?"}],
            }
            path = f"/v1/sessions/{tenant_tag}-s{i}/turns"
            started = time.perf_counter()
            r = client.post(path, json=body, headers={"Idempotency-Key": f"t{i}"})
            elapsed = time.perf_counter() - started
            if r.status_code != 202:
                raise RuntimeError(f"admission {i} answered {r.status_code}: {r.text[:200]}")
            if i >= warmup:
                samples.append(elapsed)
    return samples


def time_raw_commits(pg_url: str, n: int, warmup: int) -> list[float]:
    import psycopg

    samples: list[float] = []
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("CREATE TABLE bench_row (id int PRIMARY KEY, n bigint NOT NULL)")
        conn.execute("INSERT INTO bench_row VALUES (1, 0)")
        for i in range(warmup + n):
            started = time.perf_counter()
            conn.execute("UPDATE bench_row SET n = n + 1 WHERE id = 1")
            elapsed = time.perf_counter() - started
            if i >= warmup:
                samples.append(elapsed)
    return samples


def drop_broker_messages(broker: str, tenant: str) -> int:
    """Remove the run_session messages this run left on its broker's queue."""
    import redis

    from runtime.names import QUEUE

    client = redis.Redis.from_url(broker)
    removed = 0
    try:
        for raw in client.lrange(QUEUE, 0, -1):
            try:
                args = json.loads(base64.b64decode(json.loads(raw)["body"]))[0]
            except (ValueError, KeyError, IndexError, TypeError):
                continue
            if args and args[0] == tenant:
                removed += int(client.lrem(QUEUE, 0, raw))
    finally:
        client.close()
    return removed


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.3f} ms"


def run(n: int, warmup: int, redis_db: int) -> None:
    import psycopg

    from api.auth import token_digest
    from store.migrate import upgrade

    dbname = f"turnkeep_bench_adm_{uuid.uuid4().hex[:8]}"
    pg_url = f"{PG_ADMIN.rsplit('/', 1)[0]}/{dbname}"
    with psycopg.connect(PG_ADMIN, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{dbname}"')
    tenant = f"bench-{uuid.uuid4().hex[:8]}"
    token = uuid.uuid4().hex + uuid.uuid4().hex
    broker = f"{REDIS_BASE}/{redis_db}"
    proc: subprocess.Popen[bytes] | None = None
    try:
        sa_url = sqlalchemy_url(PG_ADMIN, dbname)
        upgrade(sa_url)
        port = free_port()
        env = {
            **os.environ,
            "PYTHONPATH": str(ROOT),
            "TURNKEEP_DATABASE_URL": sa_url,
            "TURNKEEP_REDIS_URL": broker,
            "TURNKEEP_BROKER_URL": broker,
            "TURNKEEP_AGENTS": "bench.admission",
            "TURNKEEP_TOKENS": json.dumps(
                [{"sha256": token_digest(token), "tenant": tenant, "subject": "bench"}]
            ),
        }
        proc = start_server(env, port)
        url = f"http://127.0.0.1:{port}"
        wait_ready(url, proc)
        admissions = time_admissions(url, token, "b", n, warmup)
        commits = time_raw_commits(pg_url, n, warmup)
    finally:
        if proc is not None:
            stop_server(proc)
        drop_broker_messages(broker, tenant)
        with psycopg.connect(PG_ADMIN, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{dbname}" WITH (FORCE)')

    a50, a95, a99 = (percentile(admissions, q) for q in (50, 95, 99))
    c50, c95, c99 = (percentile(commits, q) for q in (50, 95, 99))
    print(
        f"admission over HTTP, {n} sequential, keep-alive: "
        f"p50 {ms(a50)}  p95 {ms(a95)}  p99 {ms(a99)}"
    )
    print(
        f"raw Postgres single-row UPDATE commit, {n}:      "
        f"p50 {ms(c50)}  p95 {ms(c95)}  p99 {ms(c99)}"
    )
    print(f"ratio admission p50 / raw commit p50: {a50 / c50:.1f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--warmup", type=int, default=50)
    parser.add_argument(
        "--redis-db",
        type=int,
        default=14,
        help="Redis database for the API's broker queue (default 14)",
    )
    args = parser.parse_args()
    run(args.n, args.warmup, args.redis_db)


if __name__ == "__main__":
    main()
