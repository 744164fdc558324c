"""Redis commands per turn, API and worker together: ``redis_commands_per_turn``.

``uvicorn turnkeep.api.app:app`` and one worker (the product's settings: no
``--task-events``, no beat) on the bench's Redis db. After a few warm-up turns, N
demo turns (3 steps each: model, tool, model) go through the real stack one at a
time: ``POST /v1/sessions/{s}/turns``, then the bench polls Postgres (never Redis)
until the turn is terminal. A ``MONITOR`` connection (bench/monitor.py) counts every
command a client sent to the db meanwhile, by name, a script's ``EVALSHA`` by the
script it runs; the commands a script runs inside are shown apart and not counted.

The window opens once the warm-up's last task was acknowledged and closes once the
last measured one was. Celery's worker heartbeat (a ``PUBLISH`` every 2 s, a timer's)
is not counted; the worker's broker poll is a ``BRPOP`` per delivery, and one more
only after a second without any (none: the turns follow each other closely). So the
count is the turns' own, the same on every run.
"""

from __future__ import annotations

import json
import sys
import time
import uuid
from typing import Any

import httpx

from bench.context import Run
from bench.events import TaskLog
from bench.harness import REDIS_BASE, Proc, wait_until
from bench.monitor import Commands, Monitor
from bench.scenarios.admission import free_port
from bench.scenarios.admission import ready as api_ready
from turnkeep.runtime.names import TASK_RUN_SESSION

WARMUP = 3
#: seconds from a task's "succeeded" log line to its acknowledgement having been sent
ACK_GRACE = 0.3


def _turns(r: Run, http: httpx.Client, tenant: str, prefix: str, n: int) -> None:
    for i in range(n):
        session = f"{prefix}-{i:04d}"
        resp = http.post(
            f"/v1/sessions/{session}/turns",
            json={"agent": "demo", "input": [{"role": "user", "content": f"Weather in {i}?"}]},
        )
        if resp.status_code != 202:
            raise RuntimeError(f"admission answered {resp.status_code}: {resp.text[:200]}")
        if not r.c.wait_turn(tenant, session):
            raise RuntimeError(f"turn {session} did not finish in 30 s")


def _turns_acked(r: Run, w: Proc, http: httpx.Client, tenant: str, prefix: str, n: int) -> None:
    """``_turns``, then until the last task ended (its log line) and its acknowledgement
    went out: a turn is terminal before its task returns."""
    with TaskLog(w, TASK_RUN_SESSION) as ends:
        _turns(r, http, tenant, prefix, n)
        if not ends.wait(n, timeout=30):
            raise RuntimeError(f"only {ends.done} of {n} tasks ended in time")
        time.sleep(ACK_GRACE)


def per_turn(turns: Commands, n: int) -> dict[str, float]:
    """Each name's count per turn."""
    return {k: round(v / n, 2) for k, v in sorted(turns.by_name.items())}


def run(r: Run) -> dict[str, Any]:
    from turnkeep.api.auth import token_digest

    n = 10 if r.plan.quick else 20
    tenant, token = r.tenant("redis"), uuid.uuid4().hex + uuid.uuid4().hex
    port = free_port()
    env = {
        "TURNKEEP_TOKENS": json.dumps(
            [{"sha256": token_digest(token), "tenant": tenant, "subject": "bench"}]
        )
    }
    argv = [sys.executable, "-m", "uvicorn", "turnkeep.api.app:app", "--host", "127.0.0.1"]
    argv += ["--port", str(port), "--log-level", "warning", "--no-access-log"]
    api = r.env.spawn(argv, name="api", env=env)
    url = f"http://127.0.0.1:{port}"
    w, _ = r.start_turn_worker(concurrency=r.plan.concurrency, latency=0.0, name="redis")
    try:
        wait_until(lambda: api_ready(url) or not api.alive(), 60, interval=0.1, what="API ready")
        if not api.alive():
            raise RuntimeError(f"the API exited at start:\n{api.text()[-3000:]}")
        with httpx.Client(
            base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=30
        ) as http:
            _turns_acked(r, w, http, tenant, "warm", WARMUP)
            t0 = time.monotonic()
            with Monitor(REDIS_BASE, r.args.redis_db) as m:
                _turns_acked(r, w, http, tenant, "measured", n)
            took = time.monotonic() - t0
    finally:
        r.env.stop(w)
        r.env.stop(api)
    counts = per_turn(m.commands, n)
    r.figures["redis_commands_per_turn"] = sum(counts.values())
    return {
        "turns": n,
        "window_s": round(took, 3),
        "per_turn": counts,
        "published_per_turn": {k: v / n for k, v in sorted(m.commands.published.items())},
        "in_scripts_per_turn": {k: v / n for k, v in sorted(m.commands.in_scripts.items())},
    }
