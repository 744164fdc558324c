"""Redis commands per turn, API and worker together: ``redis_commands_per_turn``.

``uvicorn turnkeep.api.app:app`` and one worker (the product's settings: no
``--task-events``, no beat) on the bench's Redis db. After a few warm-up turns, N
demo turns (3 steps each: model, tool, model) go through the real stack one at a
time: ``POST /v1/sessions/{s}/turns``, then the bench polls Postgres (never Redis)
until the turn is terminal. A ``MONITOR`` connection (bench/monitor.py) counts every
command a client sent to the db meanwhile, by name, a script's ``EVALSHA`` by the
script it runs; the commands a script runs inside are shown apart and not counted.

Celery's worker heartbeat (a ``PUBLISH`` every 2 s) is not counted. What else an
idle stack sends on its own (the worker's broker poll, a ``BRPOP`` that times out
each second) is measured the same way over an idle window as long as the turns'
one, and taken off each name's count: the figure is what the turns cost.
"""

from __future__ import annotations

import json
import sys
import time
import uuid
from collections import Counter
from typing import Any

import httpx

from bench.context import Run
from bench.harness import REDIS_BASE, wait_until
from bench.monitor import Commands, Monitor
from bench.scenarios.admission import free_port
from bench.scenarios.admission import ready as api_ready

WARMUP = 3


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


def _idle(r: Run, seconds: float) -> Commands:
    with Monitor(REDIS_BASE, r.args.redis_db) as m:
        time.sleep(seconds)
    return m.commands


def per_turn(turns: Commands, idle: Commands, n: int) -> dict[str, float]:
    """Each name's count over the turns' window less the idle window's, per turn."""
    names = set(turns.by_name) | set(idle.by_name)
    out = {k: (turns.by_name[k] - idle.by_name[k]) / n for k in sorted(names)}
    return {k: round(v, 2) for k, v in out.items() if v}


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
            _turns(r, http, tenant, "warm", WARMUP)
            t0 = time.monotonic()
            with Monitor(REDIS_BASE, r.args.redis_db) as m:
                _turns(r, http, tenant, "measured", n)
            took = time.monotonic() - t0
        idle = _idle(r, took)
    finally:
        r.env.stop(w)
        r.env.stop(api)
    counts = per_turn(m.commands, idle, n)
    r.figures["redis_commands_per_turn"] = sum(counts.values())
    return {
        "turns": n,
        "window_s": round(took, 3),
        "per_turn": counts,
        "published_per_turn": {k: v / n for k, v in sorted(m.commands.published.items())},
        "in_scripts_per_turn": {k: v / n for k, v in sorted(m.commands.in_scripts.items())},
        "idle_window": dict(sorted(Counter(idle.by_name).items())),
    }
