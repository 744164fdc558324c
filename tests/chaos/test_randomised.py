"""A randomised run: sessions and turns admitted while a seeded chaos monkey SIGKILLs,
SIGSTOPs (then SIGCONTs) and restarts workers and beat for a bounded time. Then it
waits for quiescence and checks every invariant over every accepted turn.

``TURNKEEP_CHAOS_SEED`` replays a run (random when unset); ``TURNKEEP_CHAOS_SECONDS``
overrides its length. The seed and the length are printed and are in every
assertion message.
"""

from __future__ import annotations

import os
import random
import signal
import time
from dataclasses import dataclass, field

import pytest

from runtime.states import TurnState
from tests.chaos.conftest import Chaos, Supervisor
from tests.invariants import FenceWatcher
from tests.procs import Proc

SESSIONS = 8
TURNS = 24
WORKERS = 3
MAX_ACTIONS = 200


@dataclass
class Monkey:
    chaos: Chaos
    supervisor: Supervisor
    rng: random.Random
    beat: Proc
    log: list[str] = field(default_factory=list)
    #: pid -> monotonic instant to SIGCONT it
    stopped: dict[int, tuple[Proc, float]] = field(default_factory=dict)
    admitted: int = 0

    def admit(self) -> None:
        sid = f"s-rnd-{self.rng.randrange(SESSIONS)}"
        self.chaos.admit(sid, f"steps={self.rng.randint(1, 4)} #{self.admitted}")
        self.admitted += 1

    def resume_due(self, now: float, *, everything: bool = False) -> None:
        for pid, (proc, at) in list(self.stopped.items()):
            if everything or now >= at:
                proc.signal(signal.SIGCONT)
                del self.stopped[pid]
                self.log.append(f"{now:.1f} SIGCONT {proc.name} {pid}")

    def act(self, now: float) -> None:
        slot = self.rng.randrange(WORKERS)
        worker = self.supervisor.proc(slot)
        action = self.rng.choices(
            ["kill", "stop", "term", "beat", "admit"], weights=[4, 3, 1, 1, 3]
        )[0]
        if action == "admit" and self.admitted < TURNS:
            self.admit()
        elif action == "kill" and worker.pid not in self.stopped:
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


def _run(chaos: Chaos, supervisor: Supervisor, seconds: float) -> None:
    seed = int(os.environ.get("TURNKEEP_CHAOS_SEED") or random.randrange(1 << 32))
    seconds = float(os.environ.get("TURNKEEP_CHAOS_SECONDS") or seconds)
    tag = f"TURNKEEP_CHAOS_SEED={seed} TURNKEEP_CHAOS_SECONDS={seconds:g}"
    print(f"\nrandomised chaos run: {tag}")
    rng = random.Random(seed)
    chaos.procs.env["TURNKEEP_MAX_ATTEMPTS"] = "50"  # many kills must not exhaust a turn
    env = {"TURNKEEP_TEST_TOOL_SLEEP": "0.2", "TURNKEEP_DEMO_LATENCY": "0.1"}
    for _ in range(WORKERS):
        supervisor.worker(env)
    monkey = Monkey(chaos, supervisor, rng, chaos.procs.beat())
    watcher = FenceWatcher(chaos.database_url).start()
    for _ in range(TURNS // 3):
        monkey.admit()
    start = time.monotonic()
    try:
        for _ in range(MAX_ACTIONS):
            now = time.monotonic() - start
            if now >= seconds:
                break
            monkey.resume_due(now)
            monkey.act(now)
            time.sleep(rng.uniform(0.3, 1.5))
    finally:
        monkey.resume_due(time.monotonic() - start, everything=True)
    while monkey.admitted < TURNS:
        monkey.admit()
    print("\n".join(monkey.log))
    chaos.wait_all_terminal(timeout=240)
    restarts = supervisor.stop()
    note = f"{tag} actions={len(monkey.log)} restarts={len(restarts)}"
    print(note)
    assert watcher.stop() == [], note
    states = [chaos.store.get_turn(*k) for k in chaos.accepted]
    bad = [
        (t.turn_id, t.state.value, t.error) for t in states if t.state is not TurnState.COMPLETED
    ]
    assert bad == [], note
    assert len(chaos.accepted) == TURNS, note
    assert chaos.check() == [], note


def _budget(default: float) -> float:
    """The per-test timeout: the run, then up to 240 s of quiescence, and start-up."""
    return float(os.environ.get("TURNKEEP_CHAOS_SECONDS") or default) + 300


@pytest.mark.chaos
@pytest.mark.timeout(_budget(20.0))
def test_randomised_short(chaos: Chaos, supervisor: Supervisor) -> None:
    _run(chaos, supervisor, 20.0)


@pytest.mark.chaos
@pytest.mark.slow
@pytest.mark.timeout(_budget(60.0))
def test_randomised_long(chaos: Chaos, supervisor: Supervisor) -> None:
    _run(chaos, supervisor, 60.0)
