"""Two beat processes at once (a botched deploy): each sends its own recovery scans,
and both scans find and enqueue the same stalled sessions, so every stalled session
is delivered more than once. Duplicates are harmless: every turn completes exactly
once and invariants hold."""

from __future__ import annotations

import json
import signal

import pytest

from tests.chaos.conftest import Chaos
from tests.chaos.test_duplicate_delivery import outcomes
from tests.procs import wait_for
from turnkeep.runtime.names import TASK_RECOVERY_SCAN
from turnkeep.runtime.states import TurnState
from turnkeep.store.keys import lease_key

SESSIONS = 6


def queued_scan_origins(chaos: Chaos) -> set[str]:
    """The senders (beat processes) of the recovery scans waiting on the broker."""
    origins = set()
    for raw in chaos.redis.lrange(chaos.queue_list, 0, -1):
        headers = json.loads(raw)["headers"]
        if headers.get("task") == TASK_RECOVERY_SCAN:
            origins.add(headers["origin"])
    return origins


def stalled(chaos: Chaos, sids: list[str]) -> list[str]:
    found, _ = chaos.store.scans.stalled_sessions(grace=2.0, limit=1000)
    live = chaos.redis.exists(*[lease_key(chaos.tenant, s) for s in sids])
    return [] if live else [s for t, s in found if t == chaos.tenant]


@pytest.mark.chaos
def test_two_beats_duplicate_scans_are_harmless(chaos: Chaos) -> None:
    slow = {"TURNKEEP_TEST_TOOL_SLEEP": "0.5"}
    # the scans of a 4 s interval expire after 4 s: they wait on the broker meanwhile
    beat_env = {"TURNKEEP_SCAN_INTERVAL": "4"}
    beats = [chaos.procs.beat(beat_env), chaos.procs.beat(beat_env)]
    victim = chaos.procs.worker(slow, concurrency=SESSIONS)
    sids = [f"s-beat-{i}" for i in range(SESSIONS)]
    for sid in sids:
        chaos.admit(sid, "steps=3")
    wait_for(
        lambda: all(
            chaos.store.reads.get_turn(*k).state is TurnState.RUNNING for k in chaos.accepted
        ),
        30,
        what="every turn started in the victim",
    )
    victim.signal(signal.SIGKILL)
    # no worker now: the sessions stall (leases expire), and scans from both beats
    # pile up on the broker, each due to enqueue every stalled session
    wait_for(lambda: len(stalled(chaos, sids)) == SESSIONS, 30, what="every session stalled")
    wait_for(lambda: len(queued_scan_origins(chaos)) == 2, 30, what="a scan from each beat")
    workers = [chaos.procs.worker(slow, concurrency=4)]
    chaos.wait_all_terminal(timeout=90)

    for key in chaos.accepted:
        turn = chaos.store.reads.get_turn(*key)
        assert turn.state is TurnState.COMPLETED, (key, turn.state, turn.error)
        types = [e.type for e in chaos.store.reads.turn_events(*key)]
        assert types.count("turn.completed") == 1
        assert types.count("tool.completed") == 3, types
        assert turn.attempt == 2  # once in the victim, once after the scans
    n = SESSIONS
    wait_for(lambda: len(outcomes(workers)) > n, 30, what="duplicate deliveries")
    results = [r for _, r in outcomes(workers)]
    # one delivery per session ran it; every other one was a harmless duplicate
    assert results.count("ran") == n, results
    assert set(results) <= {"ran", "busy", "idle"}, results
    assert all("Sending due task recovery-scan" in b.text() for b in beats)
    assert chaos.check() == []
