"""An SSE client that keeps dropping its connection (after a random number of lines,
often in the middle of a frame) and resumes with Last-Event-ID while a worker
commits events: the union of the ids it received is exactly 1..head, with no
duplicate and no gap, in order."""

from __future__ import annotations

import json
import os
import random
import time

import httpx
import pytest

from tests.chaos.conftest import ApiHandle, Chaos

TURNS = 4
MAX_CONNECTIONS = 400


def read_some(
    api: ApiHandle, sid: str, last: int, lines: int
) -> list[tuple[int, dict[str, object]]]:
    """One connection: resume after ``last``, read at most ``lines`` lines, hang up.
    Returns the complete committed frames seen (id, data)."""
    got: list[tuple[int, dict[str, object]]] = []
    headers = {**api.headers, "Accept": "text/event-stream", "Last-Event-ID": str(last)}
    fields: dict[str, str] = {}
    with (
        httpx.Client(base_url=api.url, timeout=httpx.Timeout(10, read=3)) as c,
        c.stream("GET", f"/v1/sessions/{sid}/events", headers=headers) as r,
    ):
        assert r.status_code == 200, r.read()
        try:
            for i, line in enumerate(r.iter_lines()):
                if i >= lines:
                    break  # hang up, often half-way through a frame
                if line == "":
                    if "id" in fields:
                        got.append((int(fields["id"]), json.loads(fields["data"])))
                    fields = {}
                elif not line.startswith(":"):
                    name, _, value = line.partition(":")
                    fields[name] = value.removeprefix(" ")
        except httpx.ReadTimeout:
            pass  # nothing new for a while: reconnect
    return got


@pytest.mark.chaos
def test_sse_client_reconnecting_in_a_loop_sees_every_event_once(chaos: Chaos, sid: str) -> None:
    seed = int(os.environ.get("TURNKEEP_CHAOS_SEED") or random.randrange(1 << 32))
    rng = random.Random(seed)
    chaos.procs.worker({"TURNKEEP_DEMO_LATENCY": "0.05", "TURNKEEP_TEST_TOOL_SLEEP": "0.1"})
    api = chaos.api({"TURNKEEP_SSE_HEARTBEAT": "0.3"})
    # the session must exist before the first GET; the rest commit while we read
    chaos.admit(sid, "steps=3 turn 0")
    received: list[int] = []
    last, connections, admitted = 0, 0, 1
    deadline = time.monotonic() + 90
    while connections < MAX_CONNECTIONS and time.monotonic() < deadline:
        for seq, data in read_some(api, sid, last, rng.randint(1, 25)):
            assert data["seq"] == seq
            received.append(seq)
            last = seq
        connections += 1
        if admitted < TURNS and connections % 3 == 0:
            chaos.admit(sid, f"steps=3 turn {admitted}")
            admitted += 1
        done = admitted == TURNS and all(
            chaos.store.reads.get_turn(*k).state.terminal for k in chaos.accepted
        )
        if done and last == chaos.store.reads.get_session(chaos.tenant, sid).head_seq:
            break
    head = chaos.store.reads.get_session(chaos.tenant, sid).head_seq
    note = f"seed={seed} connections={connections} head={head}"
    assert admitted == TURNS and head >= TURNS * 10, note
    assert received == list(range(1, head + 1)), note
    assert connections > head // 5, note  # it really did reconnect, many times
    assert chaos.check() == []
    print(note)
