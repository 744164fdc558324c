"""The bench's side of a turn: admit straight through ``Store.turns.admit``, enqueue by task
name as the API does (ids only), and watch the turns table through one autocommit
psycopg connection whose queries are counted.

Both database connections are opened on first use and closed by ``disconnect()``,
so a scenario that counts the workers' transactions can hold none during its window.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from typing import Any

import psycopg
from celery import Celery

from bench.harness import TERMINAL, BenchEnv, summary_ms
from turnkeep.runtime.agents.registry import load_agents
from turnkeep.runtime.hashing import input_hash
from turnkeep.runtime.names import QUEUE, TASK_RUN_SESSION
from turnkeep.store.facade import Store
from turnkeep.store.new_turn import NewTurn

APP_NAME = "turnkeep-bench"
CITIES = ("Oslo", "Lisbon", "Nairobi", "Lima", "Osaka", "Quito", "Tunis", "Hanoi")


class Client:
    def __init__(self, env: BenchEnv) -> None:
        self.env = env
        self.agent = load_agents("turnkeep.runtime.demo").get("demo")
        self.celery = Celery("turnkeep-bench", broker=env.redis_url)
        self._store: Store | None = None
        self._pg: psycopg.Connection[Any] | None = None
        self.polls = 0  # statements the poll connection ran in the bench database

    @property
    def store(self) -> Store:
        if self._store is None:
            self._store = Store.from_url(
                f"{self.env.sa_url}?application_name={APP_NAME}", pool_size=4
            )
        return self._store

    @property
    def pg(self) -> psycopg.Connection[Any]:
        if self._pg is None or self._pg.closed:
            self._pg = psycopg.connect(self.env.pg_url, autocommit=True, application_name=APP_NAME)
        return self._pg

    def disconnect(self) -> None:
        """Close every connection of this client to the bench database (reopened on
        next use). A backend flushes its statistics when it exits; while it lives it
        may hold them back for up to 10 s."""
        if self._store is not None:
            self._store.close()
            self._store = None
        if self._pg is not None:
            self._pg.close()
            self._pg = None

    def close(self) -> None:
        self.disconnect()
        self.celery.close()

    # -- admission -------------------------------------------------------------

    def admit(self, tenant: str, session: str, *, enqueue: bool = True, n: int = 0) -> str:
        h = self.agent.definition_hash
        messages = [{"role": "user", "content": f"What is the weather in {CITIES[n % 8]}?"}]
        tid = uuid.uuid4().hex
        self.store.turns.admit(
            NewTurn(
                tenant_id=tenant,
                session_id=session,
                turn_id=tid,
                agent_name="demo",
                agent_hash=h,
                input_hash=input_hash(
                    messages=messages, agent_hash=h, output_schema=None, budget=None
                ),
                input={"messages": messages},
                output_schema=None,
                budget=None,
            )
        )
        if enqueue:
            self.enqueue(tenant, session)
        return tid

    def enqueue(self, tenant: str, session: str) -> None:
        self.celery.send_task(TASK_RUN_SESSION, args=[tenant, session], queue=QUEUE)

    def consume(self, queue: str, workers: int, *, on: bool) -> None:
        """Make every bench worker start (``on``) or stop consuming ``queue``, all at
        once, by Celery remote control (Redis only); waits for each worker's reply."""
        ctl = self.celery.control
        op = ctl.add_consumer if on else ctl.cancel_consumer
        # limit: return on the last reply, not at the timeout
        replies = op(queue, reply=True, timeout=5.0, limit=workers)
        if len(replies or []) < workers:
            raise RuntimeError(f"only {len(replies or [])} of {workers} workers answered")

    @staticmethod
    def session(i: int) -> str:
        return f"s{i:05d}"

    def admit_many(self, tenant: str, n: int, *, enqueue: bool = True) -> float:
        """Admit ``n`` one-turn sessions; the seconds it took."""
        t0 = time.perf_counter()
        for i in range(n):
            self.admit(tenant, self.session(i), enqueue=enqueue, n=i)
        return time.perf_counter() - t0

    def enqueue_many(self, tenant: str, n: int) -> None:
        for i in range(n):
            self.enqueue(tenant, self.session(i))

    # -- watching ----------------------------------------------------------------

    def query(self, sql: str, params: tuple[Any, ...] = ()) -> Any:
        self.polls += 1
        return self.pg.execute(sql, params).fetchone()

    def rows(self, sql: str, params: tuple[Any, ...] = ()) -> list[Any]:
        self.polls += 1
        return self.pg.execute(sql, params).fetchall()

    def sample(self, tenant: str) -> tuple[int, int, int]:
        """(running, terminal, worker connections to the bench database)."""
        row = self.query(
            "SELECT count(*) FILTER (WHERE state = 'running'),"
            " count(*) FILTER (WHERE state IN ('completed', 'failed', 'cancelled')),"
            " (SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
            "  AND application_name <> %s)"
            " FROM turns WHERE tenant_id = %s",
            (APP_NAME, tenant),
        )
        return int(row[0]), int(row[1]), int(row[2])

    def wait_terminal(
        self,
        tenant: str,
        n: int,
        *,
        timeout: float,
        interval: float = 0.1,
        on_sample: Callable[[float, tuple[int, int, int]], None] | None = None,
    ) -> bool:
        """Poll until ``n`` turns of ``tenant`` are terminal; False on timeout."""
        t0 = time.monotonic()
        end = t0 + timeout
        while time.monotonic() < end:
            s = self.sample(tenant)
            if on_sample is not None:
                on_sample(time.monotonic() - t0, s)
            if s[1] >= n:
                return True
            time.sleep(interval)
        return False

    def wait_turn(self, tenant: str, session: str, *, timeout: float = 30.0) -> bool:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            row = self.query(
                "SELECT state FROM turns WHERE tenant_id = %s AND session_id = %s",
                (tenant, session),
            )
            if row is not None and row[0] in TERMINAL:
                return True
            time.sleep(0.002)
        return False

    def outcome(self, tenant: str) -> dict[str, Any]:
        """States, steps and server-clock timing of a tenant's turns."""
        states = dict(
            self.rows(
                "SELECT state, count(*) FROM turns WHERE tenant_id = %s GROUP BY 1", (tenant,)
            )
        )
        row = self.query(
            "SELECT extract(epoch FROM min(created_at))::float8,"
            " extract(epoch FROM max(updated_at))::float8,"
            " array_agg(extract(epoch FROM updated_at - created_at)::float8)"
            " FROM turns WHERE tenant_id = %s",
            (tenant,),
        )
        ev = self.query(
            "SELECT count(*) FILTER (WHERE step IS NOT NULL), count(*),"
            " extract(epoch FROM max(created_at) FILTER (WHERE type = 'turn.started'))::float8"
            " FROM events WHERE tenant_id = %s",
            (tenant,),
        )
        return {
            "states": {str(k): int(v) for k, v in states.items()},
            "first_admitted": row[0],
            "last_updated": row[1],
            "turn_latency": summary_ms(row[2] or []),
            "steps": int(ev[0]),
            "events": int(ev[1]),
            "last_started": ev[2],
        }
