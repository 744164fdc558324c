"""Recovery after a crash: workers and ``celery -A turnkeep.worker.app beat`` run with
``TURNKEEP_LEASE_TTL`` = 5 s (the scan cadence is whatever the product derives; the
bench never sets TURNKEEP_SCAN_INTERVAL). A turn whose model call takes 30 s is
admitted and enqueued; once its ``turn.started`` event exists, the worker that took
its task (known from Celery's ``task-received`` event) is SIGKILLed while a second
worker runs. ``recovery_after_kill_s`` is the median, over 3 kills, of the seconds
from the kill to the ``created_at`` of the turn's next ``turn.started`` event under a
higher fence. Each kill's victim is replaced by a fresh worker before the next.
"""

from __future__ import annotations

import statistics
import time
from typing import Any

from bench.context import Run
from bench.events import TaskEvents
from bench.harness import wait_until


def _last_start(r: Run, tenant: str, session: str, turn: str) -> tuple[int, float] | None:
    row = r.c.query(
        "SELECT fence, extract(epoch FROM created_at)::float8 FROM events"
        " WHERE tenant_id = %s AND session_id = %s AND turn_id = %s AND type = 'turn.started'"
        " ORDER BY seq DESC LIMIT 1",
        (tenant, session, turn),
    )
    return None if row is None else (int(row[0]), float(row[1]))


def one_kill(r: Run, events: TaskEvents, i: int) -> dict[str, Any]:
    t, s = r.tenant("recovery"), r.c.session(i)
    since = time.time() - 1.0
    turn = r.c.admit(t, s, n=i)
    fence, _ = wait_until(lambda: _last_start(r, t, s, turn), 30, what="turn.started")
    node = wait_until(lambda: events.holder_of(s, since), 10, what="task-received")
    victim = next(w for w in r.env.workers if w.nodename == node)
    killed_at = time.time()
    r.env.stop(victim)  # SIGKILL
    budget = 12 * r.plan.lease_ttl + 60

    def newer() -> tuple[int, float] | None:
        got = _last_start(r, t, s, turn)
        return got if got is not None and got[0] > fence else None

    new_fence, started_at = wait_until(newer, budget, interval=0.05, what="a newer turn.started")
    seen_at = time.time()
    return {
        "old_fence": fence,
        "new_fence": new_fence,
        "recovery_s": started_at - killed_at,
        "observed_after_s": seen_at - killed_at,
    }


def run(r: Run) -> dict[str, Any]:
    plan = r.plan
    env, pool = r.worker_env(
        latency=plan.recovery_latency,
        concurrency=plan.concurrency,
        workers=2,
        TURNKEEP_LEASE_TTL=repr(plan.lease_ttl),
    )
    kills: list[dict[str, Any]] = []

    def worker() -> None:
        # task events say which worker received the turn (as they would tell Flower)
        r.env.start_worker(concurrency=plan.concurrency, env=env, name="rec", task_events=True)

    try:
        beat = r.env.start_beat(env)
        worker()
        worker()
        with TaskEvents(r.env.redis_url) as events:
            for i in range(plan.recovery_reps):
                kills.append(one_kill(r, events, i))
                if i + 1 < plan.recovery_reps:
                    worker()
        scans = beat.text().count("Sending due task recovery-scan")
    finally:
        r.env.stop_all()  # the workers' recovered turns are mid model call: killed
    median = statistics.median(k["recovery_s"] for k in kills)
    r.figures["recovery_after_kill_s"] = median
    r.figures["lease_ttl_s"] = plan.lease_ttl
    return {
        "lease_ttl_s": plan.lease_ttl,
        "model_latency_s": plan.recovery_latency,
        "pool": pool,
        "kills": kills,
        "beat_scans_sent": scans,
    }
