"""The ``turnkeep`` console script pyproject.toml declares: installed, and each
subcommand becomes the real process (migrations on a fresh database, the API)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import httpx
import psycopg

from tests.conftest import PG_ADMIN, app_url
from tests.procs import free_port

TURNKEEP = str(Path(sys.executable).with_name("turnkeep"))


def test_without_a_subcommand_it_prints_its_usage_and_fails():
    run = subprocess.run([TURNKEEP], capture_output=True, text=True, timeout=30)
    assert run.returncode == 2 and "usage: turnkeep" in run.stderr


def test_migrate_brings_a_fresh_database_to_head():
    name = f"turnkeep_cli_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    base = PG_ADMIN.rsplit("/", 1)[0]
    try:
        # migrations run as the owner (TURNKEEP_MIGRATE_URL), not the application's role
        env = {
            **os.environ,
            "TURNKEEP_MIGRATE_URL": f"{base}/{name}",
            "TURNKEEP_DATABASE_URL": app_url(f"{base}/{name}"),
        }
        run = subprocess.run(
            [TURNKEEP, "migrate"], env=env, capture_output=True, text=True, timeout=120
        )
        assert run.returncode == 0, run.stderr
        with psycopg.connect(f"{base}/{name}") as conn:
            tables = {r[0] for r in conn.execute("SELECT tablename FROM pg_tables").fetchall()}
        assert {"sessions", "turns", "events", "alembic_version"} <= tables
    finally:
        with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def test_api_serves(service_env):
    port = free_port()
    proc = subprocess.Popen(
        [TURNKEEP, "api", "--port", str(port), "--log-level", "warning"],
        env={**os.environ, **service_env},
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                r = httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1)
                break
            except httpx.TransportError:
                assert proc.poll() is None and time.monotonic() < deadline
                time.sleep(0.2)
        assert r.status_code == 200 and r.json() == {"status": "ok"}
    finally:
        proc.terminate()
        proc.wait(timeout=15)


def _flower(env: dict[str, str], port: int) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [TURNKEEP, "flower", f"--port={port}"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


def test_flower_answers_only_with_its_credentials(service_env):
    port = free_port()
    env = {**os.environ, **service_env, "TURNKEEP_FLOWER_BASIC_AUTH": "ops:s3cret"}
    for name in ("TURNKEEP_FLOWER_UNSAFE_NOAUTH", "TURNKEEP_FLOWER_ADDRESS", "FLOWER_BASIC_AUTH"):
        env.pop(name, None)
    proc = _flower(env, port)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                anonymous = httpx.get(f"{base}/", timeout=2)
                break
            except httpx.TransportError:
                assert proc.poll() is None and time.monotonic() < deadline
                time.sleep(0.2)
        assert anonymous.status_code == 401
        assert httpx.get(f"{base}/", auth=("ops", "wrong"), timeout=10).status_code == 401
        assert httpx.get(f"{base}/", auth=("ops", "s3cret"), timeout=10).status_code == 200
        # the password is handed over in the environment, never on the command line
        cmdline = Path(f"/proc/{proc.pid}/cmdline").read_bytes().decode()
        assert "s3cret" not in cmdline and "--address=127.0.0.1" in cmdline
    finally:
        proc.terminate()
        proc.wait(timeout=15)


def test_flower_refuses_to_start_without_authentication(service_env):
    env = {**os.environ, **service_env}
    for name in ("TURNKEEP_FLOWER_BASIC_AUTH", "TURNKEEP_FLOWER_UNSAFE_NOAUTH"):
        env.pop(name, None)
    run = subprocess.run(
        [TURNKEEP, "flower", f"--port={free_port()}"],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert run.returncode == 2 and "without authentication" in run.stderr
