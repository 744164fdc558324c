"""What every scenario gets: the sizes of the run (``Plan``), the environment, the
client, the Postgres connection budget, and the figures found so far."""

from __future__ import annotations

import argparse
import os
import uuid
from datetime import UTC, datetime
from typing import Any

from bench.client import Client
from bench.harness import ROOT, BenchEnv, Proc
from turnkeep.store.new_turn import NewTurn

RESULTS = ROOT / "bench" / "results"


class Plan:
    """Sizes of one run; ``--quick`` shrinks them."""

    def __init__(self, quick: bool) -> None:
        self.quick = quick
        self.concurrency = 16  # -c of the throughput, CPU and statement figures
        # postgres: raw single-row UPDATE commits (+ SELECT 1), and Store.turns.append idle
        self.raw_n = 300 if quick else 1000
        self.append_idle_n = 100 if quick else 300
        # append in situ: 16 threads x this many checkpoints each
        self.append_threads = 16
        self.append_steps = 40 if quick else 150
        # admission over HTTP (each followed by a /healthz on the same connection)
        self.admission_n = 300 if quick else 1000
        self.admission_warmup = 30 if quick else 100
        #: admissions that fill the tables (then ANALYZE) before the measured loops
        self.admission_seed = 500 if quick else 2000
        # no-op tasks drained by one worker; round trips one at a time
        self.noop_tasks = 1000 if quick else 4000
        self.noop_rtt = 30 if quick else 100
        # turns drained by one worker (statements, CPU and turns/s of one drain)
        self.turns = 120 if quick else 400
        self.single_turns = 8 if quick else 20
        # in-flight capacity: 1 s per model call, K = C one-turn sessions
        self.inflight = [64] if quick else [64, 256]
        self.inflight_latency = 1.0
        # recovery after SIGKILL: lease TTL, seconds per model call, repetitions
        self.lease_ttl = 5.0
        self.recovery_latency = 30.0
        self.recovery_reps = 3
        # long sessions: sessions of 10,000 prior events, and as many fresh ones
        self.long_sessions = 20 if quick else 60
        # chat: sessions of this many earlier 4-row turns (600 x 4 rows fill the 2,000-
        # row window in either run), and as many fresh ones; --quick has fewer sessions
        self.chat_turns = 600
        self.chat_sessions = 10 if quick else 30


class PoolCap:
    """Keeps the bench's worst case of Postgres connections inside a budget.

    Each worker process opens at most ``2 x TURNKEEP_DB_POOL_SIZE`` connections (the
    product's own bound, README "Postgres connections"); this Postgres is shared with
    other engineers' tests. When ``2 x pool x workers`` fits the budget the product's
    default is kept; otherwise TURNKEEP_DB_POOL_SIZE caps it and the figures say so.
    """

    def __init__(self, budget: int, enabled: bool) -> None:
        self.budget = budget
        self.enabled = enabled

    @staticmethod
    def product_pool() -> int:
        from turnkeep.runtime.settings import DatabaseSettings

        return int(DatabaseSettings.model_fields["pool_size"].default)

    def env(self, workers: int) -> tuple[dict[str, str], dict[str, Any]]:
        pool = self.product_pool()
        info: dict[str, Any] = {"product_pool_size": pool}
        if not self.enabled or 2 * pool * workers <= self.budget:
            info.update(pool_size=pool, capped=False)
            return {}, info
        capped = max(3, self.budget // (2 * workers))
        info.update(pool_size=capped, capped=True)
        return {"TURNKEEP_DB_POOL_SIZE": str(capped)}, info


class Run:
    """Shared state of one bench run."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.plan = Plan(args.quick)
        self.env = BenchEnv(redis_db=args.redis_db, keep_logs=args.keep_logs)
        self.client: Client | None = None
        self.cap = PoolCap(0, False)
        self.stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
        #: the headline figures (numbers only), filled in by the scenarios
        self.figures: dict[str, float] = {}

    @property
    def c(self) -> Client:
        assert self.client is not None
        return self.client

    def tenant(self, name: str) -> str:
        return f"bench-{name}-{os.getpid()}"

    def worker_env(
        self, *, latency: float, concurrency: int, workers: int = 1, **extra: str
    ) -> tuple[dict[str, str], dict[str, Any]]:
        env, info = self.cap.env(workers)
        env["TURNKEEP_WORKER_CONCURRENCY"] = str(concurrency)
        env["TURNKEEP_DEMO_LATENCY"] = repr(latency)
        env.update(extra)
        return env, info

    def admit_turn(self, tenant: str, agent_name: str, agent_hash: str, text: str) -> str:
        """A one-message turn in a new session, straight through the store, enqueued as
        the API would: the session's id."""
        from turnkeep.runtime.hashing import input_hash

        session = uuid.uuid4().hex
        messages = [{"role": "user", "content": text}]
        self.c.store.turns.admit(
            NewTurn(
                tenant_id=tenant,
                session_id=session,
                turn_id=uuid.uuid4().hex,
                agent_name=agent_name,
                agent_hash=agent_hash,
                input_hash=input_hash(
                    messages=messages, agent_hash=agent_hash, output_schema=None, budget=None
                ),
                input={"messages": messages},
                output_schema=None,
                budget=None,
            )
        )
        self.c.enqueue(tenant, session)
        return session

    def start_turn_worker(
        self,
        *,
        concurrency: int,
        latency: float,
        name: str,
        workers: int = 1,
        include: str | None = None,
        **extra: str,
    ) -> tuple[Proc, dict[str, Any]]:
        """One ``celery -A turnkeep.worker.app worker`` (its pool budgeted for ``workers``)."""
        env, info = self.worker_env(
            latency=latency, concurrency=concurrency, workers=workers, **extra
        )
        w = self.env.start_worker(concurrency=concurrency, env=env, include=include, name=name)
        return w, info
