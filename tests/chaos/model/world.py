"""The model's world: the real processes (API, supervised workers, beat) with three
tenants' admin tokens, and what the model believes about them (the sessions and turns
it admitted, the unique marker each message carries, what it erased, the schedules,
probes and limits it made) plus its counters.

The model never reads the product's Python API to act: every operation is an HTTP
request (tests/chaos/model/operations.py), so the same test runs unchanged on a
branch where a plane is rebuilt behind the same routes. The invariants read Postgres
as the owner and the private Redis (tests/chaos/model/invariants.py).
"""

from __future__ import annotations

import json
import os
import random
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import httpx
import psycopg

from tests.chaos.conftest import Chaos, Supervisor
from tests.procs import Proc
from tests.webhook_receiver import Receiver
from turnkeep.api.auth import token_digest
from turnkeep.runtime.agents.registry import load_agents

AGENTS = "tests.eval_agents"
WORKERS = 2
CONCURRENCY = 3
#: worker slots in all: the fairness bound is counted in them
SLOTS = WORKERS * CONCURRENCY
QUOTA_PER_SESSION = 8
BRIDGE_SECRET = "model-bridge-" + uuid.uuid4().hex
#: what every process of the model runs with: fast sweeps and ticks, a small
#: per-session quota, nothing pruned, attempts enough for many kills
ENV = {
    "TURNKEEP_AGENTS": AGENTS,
    "TURNKEEP_MAX_ATTEMPTS": "50",
    "TURNKEEP_RETAIN_EVENTS": str(10**9),
    "TURNKEEP_SCHEDULE_INTERVAL": "1",
    "TURNKEEP_EVAL_INTERVAL": "0.5",
    "TURNKEEP_ERASURE_INTERVAL": "2",
    "TURNKEEP_ERASURE_GRACE": "6",
    "TURNKEEP_MAX_QUEUED_PER_SESSION": str(QUOTA_PER_SESSION),
    "TURNKEEP_BRIDGE_SECRET": BRIDGE_SECRET,
    # a generic bridge's replies are signed webhooks (to the model's receiver)
    "TURNKEEP_WEBHOOK_SECRET": "model-whsec-" + uuid.uuid4().hex,
    "TURNKEEP_WEBHOOK_INTERVAL": "0.5",
    "TURNKEEP_WEBHOOK_ALLOW_PRIVATE": "1",
}
WORKER_ENV = {"TURNKEEP_TEST_TOOL_SLEEP": "0.2", "TURNKEEP_DEMO_LATENCY": "0.05"}
ACTIVE = ("queued", "running", "waiting")
#: the default session TTL of the first two tenants (TURNKEEP_SESSION_TTLS): every
#: session they hold, whichever path admitted into it, expires
DEFAULT_TTL = 3600.0


@dataclass(frozen=True)
class Params:
    """A run's parameters, from the environment: ``TURNKEEP_MODEL_SEED`` replays a
    run's choices; ``TURNKEEP_MODEL_STEPS`` bounds its operations and
    ``TURNKEEP_MODEL_SECONDS`` its length (the soak sets only the latter)."""

    seed: int
    steps: int
    seconds: float

    @classmethod
    def from_env(cls, steps: int, seconds: float) -> Params:
        env = os.environ.get
        return cls(
            seed=int(env("TURNKEEP_MODEL_SEED") or random.randrange(1 << 32)),
            steps=int(env("TURNKEEP_MODEL_STEPS") or steps),
            seconds=float(env("TURNKEEP_MODEL_SECONDS") or seconds),
        )

    def __str__(self) -> str:
        return (
            f"TURNKEEP_MODEL_SEED={self.seed} TURNKEEP_MODEL_STEPS={self.steps} "
            f"TURNKEEP_MODEL_SECONDS={self.seconds:g}"
        )


@dataclass
class Session:
    tenant: str
    sid: str
    #: the unique text of every message admitted into it (a fork inherits its source's)
    markers: set[str] = field(default_factory=set)
    #: the turns the model admitted into it (and reruns); the others are ticks,
    #: follow-ups, or a bridge's
    turns: list[str] = field(default_factory=list)
    #: a TTL it was admitted with (expires_after), never to be cleared
    ttl: int | None = None
    deleted: bool = False
    #: a short TTL: erased by the sweep once it passes (monotonic deadline)
    expires_by: float | None = None


@dataclass
class Schedule:
    tenant: str
    schedule_id: str
    sid: str
    every: float
    first_at: str
    paused: bool = False
    #: admissions filled its session up to the quota: a tick then may be refused, so
    #: its ticks are checked against the quota, not counted
    filled: bool = False


@dataclass
class Probe:
    """A fairness probe: ``heavy`` admitted ``backlog`` at priority 9, then ``light``
    admitted ``probe`` at the default; admitted at the DB's clock ``at``."""

    heavy: str
    light: str
    backlog: list[tuple[str, str]]
    probe: tuple[str, str]
    at: Any
    #: measured as soon as the probe started (or its wait ran out), before a later
    #: operation may delete its session or the backlog's: the light tenant's first
    #: start after ``at`` (None: none in time) and the backlog's starts before it
    light_start: Any = None
    overtook: int = 0


@dataclass
class Tenant:
    name: str
    token: str
    http: httpx.Client
    #: max_running changed at least once (a queued turn stranded then: item 1)
    limited: bool = False


@dataclass
class World:
    chaos: Chaos
    supervisor: Supervisor
    params: Params
    rng: random.Random
    api: Proc
    beat: Proc
    tenants: list[Tenant]
    #: where generic-bridge replies go (answers 200)
    receiver: Receiver
    sessions: dict[tuple[str, str], Session] = field(default_factory=dict)
    schedules: list[Schedule] = field(default_factory=list)
    probes: list[Probe] = field(default_factory=list)
    #: (tenant, sid) of delegated children the model deleted while their parent waited
    deleted_children: list[tuple[str, str, str, str]] = field(default_factory=list)
    #: (tenant, experiment id, a case session the model deleted or None)
    experiments: list[tuple[str, str, str | None]] = field(default_factory=list)
    #: (bound tenant, other tenant, turn id) of bridge messages
    bridged: list[tuple[str, str, str]] = field(default_factory=list)
    datasets: list[tuple[str, str]] = field(default_factory=list)
    ops: Counter[str] = field(default_factory=Counter)
    checks: Counter[str] = field(default_factory=Counter)
    refused: Counter[str] = field(default_factory=Counter)
    kills: int = 0
    counter: int = 0

    # -- set-up ----------------------------------------------------------------------

    @classmethod
    def start(cls, chaos: Chaos, supervisor: Supervisor, params: Params) -> World:
        chaos.procs.env.update(ENV)
        chaos.client.agents = load_agents(AGENTS)
        names = [f"{chaos.tenant}-{x}" for x in "abc"]
        chaos.procs.env["TURNKEEP_SESSION_TTLS"] = json.dumps({n: DEFAULT_TTL for n in names[:2]})
        tokens = {n: f"model-{uuid.uuid4().hex}" for n in names}
        entries = [
            {"sha256": token_digest(tok), "tenant": n, "subject": f"admin-{n}", "role": "admin"}
            for n, tok in tokens.items()
        ]
        api = chaos.procs.api({"TURNKEEP_TOKENS": json.dumps(entries)})
        supervisor.max_restarts = 10_000
        for _ in range(WORKERS):
            supervisor.worker(WORKER_ENV, concurrency=CONCURRENCY)
        beat = chaos.procs.beat()
        tenants = [
            Tenant(
                n,
                tok,
                httpx.Client(
                    base_url=api.url, headers={"Authorization": f"Bearer {tok}"}, timeout=30
                ),
            )
            for n, tok in tokens.items()
        ]
        rx = Receiver().__enter__()
        return cls(chaos, supervisor, params, random.Random(params.seed), api, beat, tenants, rx)

    def close(self) -> None:
        for t in self.tenants:
            t.http.close()
        self.receiver.__exit__(None, None, None)

    # -- helpers ---------------------------------------------------------------------

    def tenant(self, name: str) -> Tenant:
        return next(t for t in self.tenants if t.name == name)

    @property
    def ttl_tenants(self) -> list[str]:
        """The tenants with a default TTL (TURNKEEP_SESSION_TTLS)."""
        return [t.name for t in self.tenants[:2]]

    def other(self, name: str) -> Tenant:
        return self.rng.choice([t for t in self.tenants if t.name != name])

    def marker(self) -> str:
        """A text no other message of any run holds."""
        self.counter += 1
        return f"mk{self.params.seed:x}q{self.counter}z{uuid.uuid4().hex[:10]}"

    def new_sid(self, kind: str = "s") -> str:
        self.counter += 1
        return f"{kind}-m{self.counter}-{uuid.uuid4().hex[:10]}"

    def session(self, tenant: str, sid: str) -> Session:
        return self.sessions.setdefault((tenant, sid), Session(tenant, sid))

    def live(self, tenant: str | None = None) -> list[Session]:
        return [
            s
            for s in self.sessions.values()
            if not s.deleted and s.expires_by is None and (tenant is None or s.tenant == tenant)
        ]

    def admit(
        self,
        t: Tenant,
        sid: str,
        text: str,
        *,
        agent: str = "counter",
        **body: Any,
    ) -> httpx.Response:
        """POST a turn whose message carries a fresh marker; a 202/200 is recorded."""
        mark = self.marker()
        payload = {"agent": agent, "input": [{"role": "user", "content": f"{text} {mark}"}]}
        payload.update({k: v for k, v in body.items() if v is not None})
        tid = f"t-{uuid.uuid4().hex[:12]}"
        r = t.http.post(f"/v1/sessions/{sid}/turns", json=payload, headers={"Idempotency-Key": tid})
        if r.status_code in (200, 202):
            s = self.session(t.name, sid)
            s.markers.add(mark)
            s.turns.append(tid)
            if body.get("expires_after") is not None and body["expires_after"] >= 600:
                s.ttl = body["expires_after"]
        else:
            self.refused[f"admit {r.status_code}"] += 1
        return r

    def sql(self, query: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        """A read as the owner (no row security): the invariants see every tenant."""
        url = self.chaos.database_url.replace("postgresql+psycopg://", "postgresql://", 1)
        with psycopg.connect(url, autocommit=True) as conn:
            return conn.execute(query, params).fetchall()

    def now_db(self) -> Any:
        return self.sql("SELECT clock_timestamp()")[0][0]

    def note(self) -> str:
        return (
            f"{self.params} ops={dict(self.ops)} kills={self.kills} "
            f"refused={dict(self.refused)} checks={dict(self.checks)}"
        )

    def wait(self, seconds: float) -> None:
        time.sleep(seconds)
