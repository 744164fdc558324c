"""Fair delivery across tenants (issue 26) on 1 worker x c16, zero-latency demo model.

* A single tenant's drain of N turns, released at once, enqueued two ways in turns
  (three rounds each, alternating, the median kept): through the product's producer
  (each send a fair ticket: the session added to its tenant's ready set, and each
  delivery a pick: store/fair.py), and straight by task name as every message was
  before. ``fair_drain_turns_per_s`` over ``direct_drain_turns_per_s`` is
  ``fair_drain_ratio``: what fairness costs a tenant alone (goal >= 0.9).
* Tenant B's start latency (its ``turn.accepted`` -> ``turn.started``, the server's
  clock) behind tenant A's backlog of ``BACKLOG`` turns while the worker runs A's: 20
  tries through the producer (``fair_b_start_p50_ms``, ``fair_b_start_p95_ms``), and
  one with every message sent straight (``fifo_b_start_s``: B waits for A's backlog).
"""

from __future__ import annotations

import statistics
import time
from typing import Any

import redis

from bench.context import Run
from turnkeep.runtime.names import QUEUE
from turnkeep.runtime.settings import Settings
from turnkeep.store.fair import FairQueue
from turnkeep.store.producer import Producer, celery_app

#: A's backlog (``--quick``: a quarter) and B's tries
BACKLOG = 2000
TRIES = 20
ROUNDS = 3


def _producer(r: Run) -> Producer:
    """The product's producer on the bench's broker and Redis (default queue and prefix,
    as the bench's workers run)."""
    settings = Settings(redis={"url": r.env.redis_url}, broker={"url": r.env.redis_url})
    client = redis.Redis.from_url(r.env.redis_url)
    return Producer(celery_app(settings), QUEUE, fair=FairQueue(client, QUEUE))


def _drain(r: Run, name: str, n: int, send: Any) -> float:
    """Admit ``n`` turns, queue them with ``send`` while the worker consumes nothing,
    release them at once: turns per second to the last terminal."""
    t = r.tenant(name)
    r.c.admit_many(t, n, enqueue=False)
    r.c.consume(QUEUE, 1, on=False)
    for i in range(n):
        send(t, r.c.session(i))
    t0 = time.monotonic()
    r.c.consume(QUEUE, 1, on=True)
    if not r.c.wait_terminal(t, n, timeout=60 + 2 * n, interval=0.05):
        raise RuntimeError(f"{name}: not all {n} turns ended in time")
    return n / (time.monotonic() - t0)


def _started_after(r: Run, tenant: str, session: str, timeout: float) -> float:
    """Seconds from the session's turn.accepted to its turn.started (server clock)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        row = r.c.query(
            "SELECT extract(epoch FROM s.created_at - a.created_at)::float8 FROM events a"
            " JOIN events s ON s.tenant_id = a.tenant_id AND s.session_id = a.session_id"
            " AND s.type = 'turn.started'"
            " WHERE a.tenant_id = %s AND a.session_id = %s AND a.type = 'turn.accepted'",
            (tenant, session),
        )
        if row is not None:
            return float(row[0])
        time.sleep(0.01)
    raise RuntimeError(f"{tenant}/{session} did not start in {timeout} s")


def _behind_backlog(r: Run, name: str, n: int, tries: int, send: Any) -> list[float]:
    """A's ``n`` turns queued (``send``), the worker released on them, then B's turns one
    at a time: each one's start latency."""
    a, b = r.tenant(f"{name}-a"), r.tenant(f"{name}-b")
    r.c.admit_many(a, n, enqueue=False)
    r.c.consume(QUEUE, 1, on=False)
    for i in range(n):
        send(a, r.c.session(i))
    r.c.consume(QUEUE, 1, on=True)
    out = []
    for i in range(tries):
        session = f"b{i:03d}"
        r.c.admit(b, session, enqueue=False, n=i)
        send(b, session)
        out.append(_started_after(r, b, session, timeout=60 + n))
    if not r.c.wait_terminal(a, n, timeout=60 + 2 * n, interval=0.1):
        raise RuntimeError(f"{name}: A's backlog did not drain in time")
    return out


def run(r: Run) -> dict[str, Any]:
    plan = r.plan
    backlog = BACKLOG // 4 if plan.quick else BACKLOG
    producer = _producer(r)
    w, pool = r.start_turn_worker(concurrency=plan.concurrency, latency=0.0, name="fairness")
    try:
        out: dict[str, Any] = {"concurrency": plan.concurrency, "pool": pool}
        _drain(r, "fair-warm", plan.turns, producer.send)  # connections, prepared statements
        fair, direct = [], []
        for k in range(ROUNDS):
            direct.append(_drain(r, f"direct-{k}", plan.turns, r.c.enqueue))
            fair.append(_drain(r, f"fair-{k}", plan.turns, producer.send))
        out["direct_drain_turns_per_s"], out["fair_drain_turns_per_s"] = direct, fair
        r.figures["direct_drain_turns_per_s"] = statistics.median(direct)
        r.figures["fair_drain_turns_per_s"] = statistics.median(fair)
        b = _behind_backlog(r, "fair", backlog, TRIES, producer.send)
        out["fair_b_start_s"] = b
        r.figures["fair_b_start_p50_ms"] = 1000 * statistics.median(b)
        r.figures["fair_b_start_p95_ms"] = 1000 * statistics.quantiles(b, n=20)[-1]
        fifo = _behind_backlog(r, "fifo", backlog, 1, r.c.enqueue)
        r.figures["fifo_b_start_s"] = fifo[0]
        out["backlog"] = backlog
    finally:
        r.env.stop(w)
        producer.close()
    return out
