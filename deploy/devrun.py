"""`make run`: the service and its demo on this machine, with no network.

Migrates the local database as its owner (TURNKEEP_MIGRATE_URL), configures a fresh
dev token (printed), starts the API (uvicorn), two Celery worker processes, beat and
Flower, all connected as the application's role (TURNKEEP_DATABASE_URL, under
row-level security), submits a demo turn over HTTP, follows it over SSE, and keeps
running until Ctrl-C (``--once``: stop after the demo turn settles, as the test of this
script does). Both URLs default to this machine's database (runtime/settings.py).

Flower runs through ``turnkeep flower``: on 127.0.0.1, behind basic auth, with
TURNKEEP_FLOWER_BASIC_AUTH when set, else a fresh password (printed) for this run.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import secrets
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import httpx
import psycopg

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
sys.path.insert(0, str(ROOT))


def ensure_database(url: str) -> None:
    dbname = url.rsplit("/", 1)[1]
    admin = url.rsplit("/", 1)[0].replace("postgresql+psycopg://", "postgresql://") + "/postgres"
    with psycopg.connect(admin, autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (dbname,)).fetchone():
            conn.execute(f'CREATE DATABASE "{dbname}"')


def migrate(url: str) -> None:
    from store.migrate import upgrade

    ensure_database(url)
    upgrade(url)


def start(name: str, argv: list[str], env: dict[str, str], logdir: Path) -> subprocess.Popen[bytes]:
    log = (logdir / f"{name}.log").open("ab")
    print(f"  {name:<8} {' '.join(argv[:4])} ...  (log: {logdir / (name + '.log')})")
    return subprocess.Popen(
        argv, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )


def wait_ready(base: str, timeout: float = 60) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            if httpx.get(f"{base}/readyz", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    raise SystemExit("the API did not become ready; see .run/api.log")


def demo_turn(base: str, token: str, timeout: float) -> bool:
    headers = {"Authorization": f"Bearer {token}"}
    sid = f"demo-{uuid.uuid4().hex[:8]}"
    tid = uuid.uuid4().hex
    question = "What is the weather in Lisbon?"
    body = {"agent": "demo", "input": [{"role": "user", "content": question}]}
    r = httpx.post(
        f"{base}/v1/sessions/{sid}/turns",
        json=body,
        headers={**headers, "Idempotency-Key": tid},
        timeout=10,
    )
    print(f"\nPOST /v1/sessions/{sid}/turns -> {r.status_code} {r.json().get('state')}")
    print("Follow it (SSE, resumable with Last-Event-ID):")
    print(f"  curl -N -H 'Authorization: Bearer {token}' {base}/v1/sessions/{sid}/events")
    turn_url = f"{base}/v1/sessions/{sid}/turns/{tid}?wait=30"
    print(f"  curl -H 'Authorization: Bearer {token}' '{turn_url}'\n")
    done = False
    with httpx.stream(
        "GET",
        f"{base}/v1/sessions/{sid}/events",
        headers=headers,
        timeout=httpx.Timeout(timeout, connect=5),
    ) as stream:
        event_id = event_type = None
        for line in stream.iter_lines():
            if line.startswith("id:"):
                event_id = line[3:].strip()
            elif line.startswith("event:"):
                event_type = line[6:].strip()
            elif line.startswith("data:") and event_type and event_id:
                print(f"  seq {event_id:>2}  {event_type}")
                if event_type in ("turn.completed", "turn.failed", "turn.cancelled"):
                    done = event_type == "turn.completed"
                    print(f"           {json.loads(line[5:])['data']}")
                    break
            elif not line:
                event_id = event_type = None
    return done


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--once", action="store_true", help="stop after the demo turn settles")
    ap.add_argument("--migrate-only", action="store_true")
    ap.add_argument("--port", type=int, default=int(os.environ.get("TURNKEEP_PORT", "8000")))
    ap.add_argument("--flower-port", type=int, default=5555)
    args = ap.parse_args()

    from runtime.settings import Settings

    settings = Settings()
    owner_url, app_url = settings.effective_migrate_url, settings.database_url
    migrate(owner_url)
    if args.migrate_only:
        print(f"migrated {owner_url.rsplit('@', 1)[-1]}")
        return 0
    token = "tk_dev_" + secrets.token_urlsafe(24)
    flower_auth = os.environ.get("TURNKEEP_FLOWER_BASIC_AUTH", "")
    if not flower_auth and os.environ.get("TURNKEEP_FLOWER_UNSAFE_NOAUTH", "") != "1":
        flower_auth = "dev:" + secrets.token_urlsafe(16)
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "TURNKEEP_DATABASE_URL": app_url,
        "TURNKEEP_MIGRATE_URL": owner_url,
        "TURNKEEP_FLOWER_BASIC_AUTH": flower_auth,
        "TURNKEEP_TOKENS": json.dumps(
            [
                {
                    "sha256": hashlib.sha256(token.encode()).hexdigest(),
                    "tenant": "dev",
                    "subject": "dev",
                }
            ]
        ),
    }
    logdir = ROOT / ".run"
    logdir.mkdir(exist_ok=True)
    base = f"http://127.0.0.1:{args.port}"
    celery = str(BIN / "celery")
    print("starting turnkeep:")
    procs = [
        start(
            "api",
            [str(BIN / "uvicorn"), "api.app:app", "--host", "127.0.0.1", "--port", str(args.port)],
            env,
            logdir,
        ),
        start(
            "worker1",
            [celery, "-A", "worker.app", "worker", "-n", "w1@%h", "-l", "INFO"],
            env,
            logdir,
        ),
        start(
            "worker2",
            [celery, "-A", "worker.app", "worker", "-n", "w2@%h", "-l", "INFO"],
            env,
            logdir,
        ),
        start(
            "beat",
            [
                celery,
                "-A",
                "worker.app",
                "beat",
                "-l",
                "INFO",
                "-s",
                str(logdir / "celerybeat-schedule"),
            ],
            env,
            logdir,
        ),
    ]
    if not args.once:
        procs.append(
            start(
                "flower",
                [sys.executable, "-m", "turnkeep.cli", "flower", f"--port={args.flower_port}"],
                env,
                logdir,
            )
        )
    try:
        wait_ready(base)
        print(f"\nAPI     {base}  (docs: {base}/docs)")
        if not args.once:
            user, _, password = flower_auth.partition(":")
            login = f"user {user!r}, password {password!r}" if flower_auth else "NO AUTH"
            print(f"Flower  http://127.0.0.1:{args.flower_port}  ({login})")
        print(f"Token   {token}   (tenant 'dev'; this run only)")
        ok = demo_turn(base, token, timeout=60)
        print("\ndemo turn completed" if ok else "\ndemo turn did NOT complete")
        if args.once:
            return 0 if ok else 1
        print("running; Ctrl-C stops everything")
        while all(p.poll() is None for p in procs):
            time.sleep(1)
        print("a process exited; see .run/*.log")
        return 1
    except KeyboardInterrupt:
        return 0
    finally:
        for p in procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
        for p in procs:
            try:
                p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)


if __name__ == "__main__":
    sys.exit(main())
