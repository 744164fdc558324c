"""max_running never strands a queued turn (issue 37): clearing a limit starts what it
held at once, and a session left in a held set after it started (a ghost) does not
keep a slot empty until the recovery scan comes round. Beat runs with a scan interval
far above each bound, so only the wakes can make them; how many ran at once, and
when, is read from the journal (tests/running.py)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from datetime import timedelta

import pytest
import redis

from tests.conftest import broker_or
from tests.integration.api_server import Api, serve_api
from tests.procs import wait_for
from tests.running import Span, most_at_once, running_spans
from turnkeep.client import Client as TurnkeepClient
from turnkeep.runtime.states import TurnState
from turnkeep.store.held import HeldSessions, Scope

#: the recovery scan's interval in these tests: no bound below waits for it
SCAN = {"TURNKEEP_SCAN_INTERVAL": "60"}


@pytest.fixture(scope="module")
def api(service_env: dict[str, str]) -> Iterator[Api]:
    broker = broker_or(service_env["TURNKEEP_REDIS_URL"])
    with serve_api(service_env, agents="tests.agents", broker_url=broker) as handle:
        yield handle


@pytest.fixture
def held(redis_url: str) -> Iterator[HeldSessions]:
    client = redis.Redis.from_url(redis_url)
    yield HeldSessions(client)
    client.close()


def test_clearing_a_limit_starts_every_held_turn_at_once(
    api: Api, procs, store, held: HeldSessions
) -> None:
    admin = TurnkeepClient(api.url, api.more["a-admin"])
    member = TurnkeepClient(api.url, api.token_a)
    try:
        admin.max_running.set(1)
        procs.worker({"TURNKEEP_TEST_TOOL_SLEEP": "2"}, concurrency=8)
        procs.beat(SCAN)
        turns = []
        for i in range(6):
            sid = f"s-clear-{i}-{uuid.uuid4().hex[:6]}"
            turns.append((api.tenant_a, sid, member.turns.admit(sid, "counter", "steps=1").turn_id))
        scope = Scope(api.tenant_a)
        wait_for(lambda: len(held.held(scope)) == 5, 60, what="five sessions held at the limit")
        cleared = time.monotonic()
        admin.max_running.set(None)
        for t in turns:
            left = max(1.0, 20 - (time.monotonic() - cleared))
            assert member.turns.wait(t[1], t[2], timeout=left).state == "completed"
        # every held turn started at once, beside the others: not one at a time
        assert most_at_once(running_spans(store, turns)) >= 4
        assert held.held(scope) == set()
    finally:
        admin.max_running.set(None)
        admin.close()
        member.close()


def test_raising_a_limit_fills_the_slots_it_adds_at_once(
    api: Api, procs, store, held: HeldSessions
) -> None:
    admin = TurnkeepClient(api.url, api.more["a-admin"])
    member = TurnkeepClient(api.url, api.token_a)
    try:
        admin.max_running.set(1)
        procs.worker({"TURNKEEP_TEST_TOOL_SLEEP": "3"}, concurrency=8)
        procs.beat(SCAN)
        turns = []
        for i in range(6):
            sid = f"s-raise-{i}-{uuid.uuid4().hex[:6]}"
            turns.append((api.tenant_a, sid, member.turns.admit(sid, "counter", "steps=1").turn_id))
        scope = Scope(api.tenant_a)
        wait_for(lambda: len(held.held(scope)) == 5, 60, what="five sessions held at the limit")
        admin.max_running.set(4)

        def running() -> int:
            return sum(store.reads.get_turn(*t).state is TurnState.RUNNING for t in turns)

        # the three slots it added are taken while the first turn still runs, not one
        # by one as turns end, nor at the workers' next reading of the limits
        wait_for(lambda: running() == 4, 2.5, interval=0.05, what="four turns running")
        for t in turns:
            assert member.turns.wait(t[1], t[2], timeout=60).state == "completed"
        assert most_at_once(running_spans(store, turns)) == 4
    finally:
        admin.max_running.set(None)
        admin.close()
        member.close()


def _short_of(limit: int, spans: list[Span]) -> timedelta:
    """How long, between the first start and the last, fewer than ``limit`` turns ran:
    the time a free slot waited to be refilled."""
    edges = sorted([(s, 1) for s, _, _ in spans] + [(e, -1) for _, e, _ in spans])
    last_start = max(s for s, _, _ in spans)
    short, now, since = timedelta(0), 0, None
    for at, step in edges:
        if at > last_start:
            break
        if since is not None and now < limit:
            short += at - since
        now += step
        since = at
    return short


def test_a_ghost_at_the_head_of_a_held_set_does_not_slow_refills(
    procs, client, store, tenant, held: HeldSessions
) -> None:
    # a session in the held set whose turn already ran: what a start by the scan's
    # wake or by a fresh enqueue left behind, the oldest member of its set
    ghost = f"s-ghost-{uuid.uuid4().hex[:6]}"
    procs.worker({"TURNKEEP_TEST_TOOL_SLEEP": "0"}, concurrency=2)
    done = client.admit(tenant, ghost, "counter", "steps=1")
    assert client.wait_terminal(tenant, ghost, done).state is TurnState.COMPLETED
    procs.stop_all()
    held.hold(Scope(tenant), ghost)
    store.max_running.set_limits(tenant, max_running=2, updated_by="test")
    procs.worker({"TURNKEEP_TEST_TOOL_SLEEP": "2"}, concurrency=6)
    procs.beat(SCAN)
    turns = []
    for i in range(6):
        sid = f"s-refill-{i}-{uuid.uuid4().hex[:6]}"
        turns.append((tenant, sid, client.admit(tenant, sid, "counter", "steps=1")))
    for t in turns:
        assert client.wait_terminal(*t, timeout=60).state is TurnState.COMPLETED
    spans = running_spans(store, turns)
    assert most_at_once(spans) == 2, spans
    # each freed slot went to a held turn as it freed, whatever stood at the set's head
    short = _short_of(2, spans)
    assert short < timedelta(seconds=3), (short, sorted(spans))
    assert ghost not in held.held(Scope(tenant))


def test_the_scan_sends_every_session_a_limit_no_longer_holds(
    procs, client, store, tenant, held: HeldSessions
) -> None:
    """A limit cleared where no wake follows (a row changed by hand, a wake lost with
    the API): the recovery scan's next pass sends every session it held."""
    store.max_running.set_limits(tenant, max_running=1, updated_by="test")
    procs.worker({"TURNKEEP_TEST_TOOL_SLEEP": "2"}, concurrency=8)
    procs.beat({"TURNKEEP_SCAN_INTERVAL": "1"})
    turns = []
    for i in range(6):
        sid = f"s-scan-{i}-{uuid.uuid4().hex[:6]}"
        turns.append((tenant, sid, client.admit(tenant, sid, "counter", "steps=1")))
    scope = Scope(tenant)
    wait_for(lambda: len(held.held(scope)) >= 4, 60, what="sessions held at the limit")
    store.max_running.set_limits(tenant, max_running=None, updated_by="test")
    cleared = time.monotonic()
    for t in turns:
        left = max(1.0, 20 - (time.monotonic() - cleared))
        assert client.wait_terminal(*t, timeout=left).state is TurnState.COMPLETED
    assert most_at_once(running_spans(store, turns)) >= 3
    assert held.held(scope) == set()
