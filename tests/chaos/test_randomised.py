"""A randomised soak: turns admitted at a steady rate over many sessions for the whole
run while a seeded chaos monkey SIGKILLs, SIGSTOPs (then SIGCONTs) and restarts
workers and beat. Then it waits for every admitted turn to end and checks every
invariant over all of them, effects included.

Parameters (environment; the defaults are the test's):

- ``TURNKEEP_CHAOS_SEED``: replays a run's choices (random when unset);
- ``TURNKEEP_CHAOS_SECONDS``: how long admissions and faults go on;
- ``TURNKEEP_CHAOS_RATE``: turns admitted per second (default 1);
- ``TURNKEEP_CHAOS_SESSIONS``: sessions the turns are spread over (default 8).

Every turn runs ``ledger`` (tests/chaos/chaos_agents.py): 1 to 4 tool calls,
alternating the idempotent ``count`` and the effectful ``charge``, each logged
outside the worker, so the checks can count effects against the journal. The
parameters and the counts are printed and are in every assertion message.
"""

from __future__ import annotations

import math
import os
import random
import signal
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg
import pytest

from tests.chaos.conftest import Chaos, Supervisor
from tests.invariants import FenceWatcher, effects_accounted, redis_fence_covers_postgres
from tests.procs import Proc, wait_for
from turnkeep.runtime.agents.registry import load_agents

WORKERS = 3
AGENTS = "tests.chaos.chaos_agents"
#: after the run: how long the admissions may lag behind their schedule, and the
#: least time the backlog gets to drain (a 2-core machine shared with other work)
ADMIT_GRACE = 60.0
DRAIN = 240.0


@dataclass(frozen=True)
class Params:
    seed: int
    seconds: float
    rate: float
    sessions: int

    @classmethod
    def from_env(cls, seconds: float) -> Params:
        env = os.environ.get
        return cls(
            seed=int(env("TURNKEEP_CHAOS_SEED") or random.randrange(1 << 32)),
            seconds=float(env("TURNKEEP_CHAOS_SECONDS") or seconds),
            rate=float(env("TURNKEEP_CHAOS_RATE") or 1.0),
            sessions=int(env("TURNKEEP_CHAOS_SESSIONS") or 8),
        )

    @property
    def planned(self) -> int:
        """Admissions in the run: one every 1/rate seconds from its start."""
        return max(1, math.ceil(self.seconds * self.rate))

    @property
    def drain(self) -> float:
        return DRAIN + self.seconds / 2

    def __str__(self) -> str:
        return (
            f"TURNKEEP_CHAOS_SEED={self.seed} TURNKEEP_CHAOS_SECONDS={self.seconds:g} "
            f"TURNKEEP_CHAOS_RATE={self.rate:g} TURNKEEP_CHAOS_SESSIONS={self.sessions}"
        )


class Admitter:
    """Admits ``planned`` turns at ``rate`` on a thread of its own, spread over the
    sessions at random (its own ``Random``, so the monkey's choices do not depend on
    how the two threads interleave). Behind schedule it catches up without pausing;
    it gives up ``ADMIT_GRACE`` seconds after the run's end."""

    def __init__(self, chaos: Chaos, params: Params) -> None:
        self.chaos = chaos
        self.params = params
        self.rng = random.Random(params.seed ^ 0x5EED)
        self.admitted = 0
        self.last_at = 0.0
        self.error: BaseException | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="admitter", daemon=True)

    def start(self) -> Admitter:
        self._thread.start()
        return self

    def _run(self) -> None:
        p = self.params
        start = time.monotonic()
        try:
            for n in range(p.planned):
                delay = start + n / p.rate - time.monotonic()
                if self._stop.wait(max(0.0, delay)):
                    return
                sid = f"s-rnd-{self.rng.randrange(p.sessions)}"
                self.chaos.admit(sid, f"steps={self.rng.randint(1, 4)} #{n}", agent="ledger")
                self.admitted += 1
                self.last_at = time.monotonic() - start
        except BaseException as exc:  # re-raised by join, in the test's thread
            self.error = exc

    def join(self) -> None:
        self._thread.join(ADMIT_GRACE)
        self._stop.set()
        self._thread.join(30)
        if self.error is not None:
            raise self.error


@dataclass
class Monkey:
    chaos: Chaos
    supervisor: Supervisor
    rng: random.Random
    beat: Proc
    log: list[str] = field(default_factory=list)
    #: pid -> monotonic instant to SIGCONT it
    stopped: dict[int, tuple[Proc, float]] = field(default_factory=dict)

    def resume_due(self, now: float, *, everything: bool = False) -> None:
        for pid, (proc, at) in list(self.stopped.items()):
            if everything or now >= at:
                proc.signal(signal.SIGCONT)
                del self.stopped[pid]
                self.log.append(f"{now:.1f} SIGCONT {proc.name} {pid}")

    def act(self, now: float) -> None:
        slot = self.rng.randrange(WORKERS)
        worker = self.supervisor.proc(slot)
        action = self.rng.choices(["kill", "stop", "term", "beat"], weights=[4, 3, 1, 1])[0]
        if action == "kill" and worker.pid not in self.stopped:
            worker.signal(signal.SIGKILL)  # the supervisor starts it again
        elif action == "stop" and worker.pid not in self.stopped and len(self.stopped) < 2:
            worker.signal(signal.SIGSTOP)
            self.stopped[worker.pid] = (worker, now + self.rng.uniform(0.5, 4.0))
        elif action == "term" and worker.pid not in self.stopped:
            worker.signal(signal.SIGTERM)  # a restart: warm shutdown, then the supervisor
        elif action == "beat":
            self.beat.signal(signal.SIGKILL)
            self.beat = self.chaos.procs.beat()
        else:
            return
        self.log.append(f"{now:.1f} {action} slot {slot} pid {worker.pid}")

    def run(self, seconds: float) -> None:
        start = time.monotonic()
        try:
            while (now := time.monotonic() - start) < seconds:
                self.resume_due(now)
                self.act(now)
                time.sleep(self.rng.uniform(0.3, 1.5))
        finally:
            self.resume_due(time.monotonic() - start, everything=True)


def _active(chaos: Chaos) -> int:
    with psycopg.connect(_pg(chaos.database_url)) as conn:
        row = conn.execute(
            "SELECT count(*) FROM turns WHERE tenant_id = %s"
            " AND state NOT IN ('completed', 'failed', 'cancelled')",
            (chaos.tenant,),
        ).fetchone()
    return int(row[0]) if row else 0


def _pg(url: str) -> str:
    return url.replace("postgresql+psycopg://", "postgresql://", 1)


def _counts(chaos: Chaos) -> dict[str, Any]:
    """What the run did, from the journal and the tools' own tables."""
    mine = f"{chaos.tenant}/%"
    with psycopg.connect(_pg(chaos.database_url)) as conn:
        states: dict[str, int] = dict(
            conn.execute(
                "SELECT state, count(*) FROM turns WHERE tenant_id = %s GROUP BY state",
                (chaos.tenant,),
            ).fetchall()
        )
        events: dict[str, int] = dict(
            conn.execute(
                "SELECT type, count(*) FROM events WHERE tenant_id = %s GROUP BY type",
                (chaos.tenant,),
            ).fetchall()
        )
        effects = conn.execute(
            "SELECT count(*) FROM test_tool_effects WHERE key LIKE %s", (mine,)
        ).fetchone()
        calls = conn.execute(
            "SELECT count(*), count(DISTINCT key) FROM test_tool_calls WHERE key LIKE %s",
            (mine,),
        ).fetchone()
        bad = conn.execute(
            "SELECT turn_id, state, error FROM turns WHERE tenant_id = %s"
            " AND state <> 'completed' LIMIT 10",
            (chaos.tenant,),
        ).fetchall()
    assert effects is not None and calls is not None
    return {
        "states": states,
        "attempts": events.get("turn.started", 0),
        "tool_results": events.get("tool.completed", 0),
        "interrupted": events.get("tool.interrupted", 0),
        "idempotent_effects": effects[0],
        "tool_runs": calls[0],
        "tool_reruns": calls[0] - calls[1],
        "not_completed": bad,
    }


def _run(chaos: Chaos, supervisor: Supervisor, seconds: float) -> None:
    params = Params.from_env(seconds)
    print(f"\nrandomised soak: {params}")
    env = chaos.procs.env
    env["TURNKEEP_AGENTS"] = AGENTS
    env["TURNKEEP_MAX_ATTEMPTS"] = "50"  # many kills must not exhaust a turn
    # nothing pruned: the checks see every event of the run
    env["TURNKEEP_RETAIN_EVENTS"] = str(10**9)
    chaos.client.agents = load_agents(AGENTS)
    # a bound against a crash loop, above what the monkey's pace can cause
    supervisor.max_restarts = 100 + 2 * math.ceil(params.seconds)
    worker_env = {"TURNKEEP_TEST_TOOL_SLEEP": "0.2", "TURNKEEP_DEMO_LATENCY": "0.1"}
    for _ in range(WORKERS):
        supervisor.worker(worker_env)
    monkey = Monkey(chaos, supervisor, random.Random(params.seed), chaos.procs.beat())
    watcher = FenceWatcher(chaos.database_url).start()
    admitter = Admitter(chaos, params).start()
    monkey.run(params.seconds)
    admitter.join()
    backlog = _active(chaos)
    log = Path(chaos.procs.logdir) / "monkey.log"
    log.write_text("\n".join(monkey.log) + "\n")
    note = f"{params} admitted={admitter.admitted} actions={len(monkey.log)}"
    print(f"{note} last admission at {admitter.last_at:.1f}s, active then {backlog}; log {log}")
    drain_start = time.monotonic()
    try:
        wait_for(lambda: _active(chaos) == 0, params.drain, interval=1.0, what="all turns ended")
    finally:
        restarts = supervisor.stop()
        counts = _counts(chaos)
        drained = time.monotonic() - drain_start
        note += f" restarts={len(restarts)} drain={drained:.0f}s {counts}"
        print(note)
    # the schedule spans the run: admissions went on while the monkey acted
    assert admitter.admitted == params.planned == len(chaos.accepted), note
    assert restarts, note
    assert watcher.stop() == [], note
    assert counts["not_completed"] == [], note
    assert counts["states"] == {"completed": params.planned}, note
    assert chaos.check() == [], note
    assert effects_accounted(chaos.database_url, tenants=[chaos.tenant]) == [], note
    assert (
        redis_fence_covers_postgres(chaos.database_url, chaos.redis, tenants=[chaos.tenant]) == []
    ), note


def _budget(default: float) -> float:
    """The per-test timeout: the run, the admissions' grace, the drain, start-up."""
    seconds = float(os.environ.get("TURNKEEP_CHAOS_SECONDS") or default)
    return seconds + ADMIT_GRACE + DRAIN + seconds / 2 + 300


@pytest.mark.chaos
@pytest.mark.timeout(_budget(20.0))
def test_randomised_short(chaos: Chaos, supervisor: Supervisor) -> None:
    _run(chaos, supervisor, 20.0)


@pytest.mark.chaos
@pytest.mark.slow
@pytest.mark.timeout(_budget(60.0))
def test_randomised_long(chaos: Chaos, supervisor: Supervisor) -> None:
    _run(chaos, supervisor, 60.0)
