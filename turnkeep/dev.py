"""``turnkeep dev`` (what ``make run`` runs): the service and its demo on this machine.

Migrates the local database as its owner (TURNKEEP_MIGRATE_URL, creating the database
when it is missing) with ``turnkeep migrate``, configures a fresh dev token (printed),
starts the API, two Celery worker processes, beat and Flower, each through this command
(``turnkeep api``, ``worker``, ``beat``, ``flower``), all connected as the application's role
(TURNKEEP_DATABASE_URL, under row-level security), submits a demo turn with the
typed client, follows its events, and keeps running until Ctrl-C or SIGTERM (``once``:
stop after the demo turn settles, as the test of ``make run`` does). Its processes are
started, and stopped in one sequence that a second signal hurries but never cuts short,
by turnkeep/supervisor.py.

Postgres and Redis: the URLs in the environment when set; else the machine's servers
when they answer on 127.0.0.1:5432 and :6379; else real servers from the
turnkeep[embedded] wheels, started under ``.run/embedded/`` and stopped after the rest
(turnkeep/embedded.py). The banner says which.

The processes' logs go to ``.run/`` in the current directory, which is also on their
``PYTHONPATH`` (an agents module of the project you run it from is found). Flower runs
on 127.0.0.1 behind basic auth: TURNKEEP_FLOWER_BASIC_AUTH when set, else a fresh
password (printed) for this run.
"""

from __future__ import annotations

import json
import os
import secrets
import shlex
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import httpx
import psycopg

from turnkeep import embedded
from turnkeep.client import Client
from turnkeep.render import console, event_text
from turnkeep.runtime.local_settings import FlowerSettings
from turnkeep.runtime.settings import APP_ROLE, Settings
from turnkeep.runtime.tokens import token_digest
from turnkeep.supervisor import DevProcess, Supervisor

#: the demo turn must settle within this many seconds
DEMO_TIMEOUT = 60.0
#: the API must answer /readyz within this many seconds
READY_TIMEOUT = 60.0


def ensure_database(url: str) -> None:
    """Create the database of ``url`` (an owner's URL) when it does not exist."""
    dbname = url.rsplit("/", 1)[1]
    admin = url.rsplit("/", 1)[0].replace("postgresql+psycopg://", "postgresql://") + "/postgres"
    with psycopg.connect(admin, autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (dbname,)).fetchone():
            conn.execute(f'CREATE DATABASE "{dbname}"')


def migrate(url: str) -> None:
    """Bring the database of ``url`` (an owner's URL) to head: ``turnkeep migrate``, the
    command an operator runs, in its own process (this one imports nothing of store/)."""
    ensure_database(url)
    done = subprocess.run(turnkeep("migrate"), env={**os.environ, "TURNKEEP_MIGRATE_URL": url})
    if done.returncode != 0:
        raise SystemExit(f"turnkeep migrate failed (exit {done.returncode}); see above")


def turnkeep(*args: str) -> list[str]:
    """The command line of a ``turnkeep`` subcommand, run by this interpreter."""
    return [sys.executable, "-m", "turnkeep.cli", *args]


def start(
    supervisor: Supervisor, name: str, argv: list[str], env: dict[str, str], logdir: Path
) -> DevProcess:
    print(f"  {name:<8} {' '.join(['turnkeep', *argv[3:]])}  (log: .run/{name}.log)")
    return supervisor.start(name, argv, env, logdir / f"{name}.log")


def wait_ready(base: str, procs: list[DevProcess], timeout: float) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            if httpx.get(f"{base}/readyz", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        if procs[0].popen.poll() is not None:
            break
        time.sleep(0.3)
    raise SystemExit("the API did not become ready; see .run/api.log")


def demo_turn(base: str, token: str, timeout: float) -> bool:
    """Submit the demo turn and follow its events until it settles: True once completed,
    False when it failed, was cancelled or did not settle within ``timeout``."""
    out = console()
    sid = f"demo-{uuid.uuid4().hex[:8]}"
    question = "What is the weather in Lisbon?"
    with Client(base, token) as tk:
        turn = tk.turns.admit(sid, "demo", question)
        tid = turn.turn_id
        print(f"\nPOST /v1/sessions/{sid}/turns -> {turn.state}  (turn {tid})")
        print("Follow it (SSE, resumable with Last-Event-ID):")
        print(f"  curl -N -H 'Authorization: Bearer {token}' {base}/v1/sessions/{sid}/events")
        print("or with the CLI:")
        print(f"  export TURNKEEP_URL={base} TURNKEEP_TOKEN={shlex.quote(token)}")
        print(f"  turnkeep tail {sid} --turn {tid}")
        print(f"  turnkeep show {sid} {tid}\n")
        outcome: list[str] = []
        abandoned = threading.Event()

        def follow() -> None:
            try:
                for event in tk.sessions.events(sid, after=turn.accepted_seq - 1):
                    out.print(event_text(event))
                    if event.turn_id == tid and event.terminal:
                        outcome.append(event.type)
                        return
            except Exception as exc:
                if not abandoned.is_set():  # else: the client was closed under it
                    print(f"error: following the demo turn: {exc}", file=sys.stderr)

        follower = threading.Thread(target=follow, name="demo-follow", daemon=True)
        follower.start()
        follower.join(timeout)
        abandoned.set()
    if not outcome:
        print(f"\nthe demo turn did not settle in {timeout:.0f} s; see .run/*.log")
    return outcome == ["turn.completed"]


def _flower_auth(flower: FlowerSettings) -> str:
    auth = flower.basic_auth
    if not auth and not flower.unsafe_noauth:
        auth = "dev:" + secrets.token_urlsafe(16)
    return auth


def _env(app_url: str, owner_url: str, flower_auth: str, token: str) -> dict[str, str]:
    path = [str(Path.cwd()), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    return {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(path),
        "TURNKEEP_DATABASE_URL": app_url,
        "TURNKEEP_MIGRATE_URL": owner_url,
        "TURNKEEP_FLOWER_BASIC_AUTH": flower_auth,
        "TURNKEEP_TOKENS": json.dumps(
            [{"sha256": token_digest(token), "tenant": "dev", "subject": "dev"}]
        ),
    }


def run(
    *, once: bool = False, migrate_only: bool = False, port: int = 8000, flower_port: int = 5555
) -> int:
    """Migrate, start everything, run the demo turn; the exit status. SIGTERM or
    Ctrl-C stops it all (turnkeep/supervisor.py): the processes within their grace, then
    the embedded servers; a second one hurries that, and the exit status is 0."""
    # a worker's warm shutdown ends within its grace (worker/shutdown.py): a few seconds
    # more, and what is left of it is killed
    supervisor = Supervisor(Settings().worker.shutdown_grace + 5.0)
    supervisor.install()
    local: embedded.EmbeddedServices | None = None
    try:
        # the machine's Postgres and Redis when they answer, else embedded ones from the
        # turnkeep[embedded] wheels (turnkeep/embedded.py), stopped after the rest
        local = embedded.local_services(APP_ROLE)
        os.environ.update(local.env)
        print("services:")
        for note in local.notes:
            print(f"  {note}")
        return _run(
            supervisor, once=once, migrate_only=migrate_only, port=port, flower_port=flower_port
        )
    except KeyboardInterrupt:
        print("\nstopping (a second Ctrl-C or SIGTERM: at once)")
        return 0
    finally:
        supervisor.stop(local)


def _run(
    supervisor: Supervisor, *, once: bool, migrate_only: bool, port: int, flower_port: int
) -> int:
    settings = Settings()
    owner_url, app_url = settings.database.effective_migrate_url, settings.database.url
    migrate(owner_url)
    if migrate_only:
        print(f"migrated {owner_url.rsplit('@', 1)[-1]}")
        return 0
    token = "tk_dev_" + secrets.token_urlsafe(24)
    flower_auth = _flower_auth(settings.flower)
    env = _env(app_url, owner_url, flower_auth, token)
    logdir = Path.cwd() / ".run"
    logdir.mkdir(exist_ok=True)
    base = f"http://127.0.0.1:{port}"
    print("starting turnkeep:")
    services = [
        ("api", turnkeep("api", "--host", "127.0.0.1", "--port", str(port))),
        ("worker1", turnkeep("worker", "-n", "w1@%h", "-l", "INFO")),
        ("worker2", turnkeep("worker", "-n", "w2@%h", "-l", "INFO")),
        ("beat", turnkeep("beat", "-l", "INFO", "-s", str(logdir / "celerybeat-schedule"))),
    ]
    if not once:
        services.append(("flower", turnkeep("flower", f"--port={flower_port}")))
    # each worker serves its metrics on a port of its own (docs/operations.md)
    metrics = {name: embedded.free_port() for name, _ in services if name.startswith("worker")}
    procs = [
        start(
            supervisor,
            name,
            argv,
            {**env, "TURNKEEP_METRICS_PORT": str(metrics.get(name, 0))},
            logdir,
        )
        for name, argv in services
    ]
    wait_ready(base, procs, READY_TIMEOUT)
    print(f"\nAPI     {base}  (docs: {base}/docs, console: {base}/console)")
    scrape = ", ".join(f"http://127.0.0.1:{p}/metrics" for p in metrics.values())
    print(f"Metrics {base}/metrics, workers: {scrape}")
    if not once:
        user, _, password = flower_auth.partition(":")
        login = f"user {user!r}, password {password!r}" if flower_auth else "NO AUTH"
        print(f"Flower  http://127.0.0.1:{flower_port}  ({login})")
    print(f"Token   {token}   (tenant 'dev'; this run only)")
    ok = demo_turn(base, token, DEMO_TIMEOUT)
    print("\ndemo turn completed" if ok else "\ndemo turn did NOT complete")
    if once:
        return 0 if ok else 1
    print("running; Ctrl-C stops everything")
    while all(p.popen.poll() is None for p in procs):
        time.sleep(1)
    print("a process exited; see .run/*.log")
    return 1
