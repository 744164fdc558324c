"""max_running (issue 26): a tenant's declared limit and an agent's keep the excess
queued, never failed, and start it as soon as a slot frees; a worker SIGKILLed while
it holds a slot neither loses the slot nor lets it be handed out twice. How many ran
at once is read from the journal (tests/running.py), never from logs.

Real workers with more threads than the limit, so only the limit can hold them back;
the turns' tool sleeps (TURNKEEP_TEST_TOOL_SLEEP) so that they overlap."""

from __future__ import annotations

import signal
import uuid
from collections.abc import Iterator

import pytest

from tests.conftest import broker_or
from tests.integration.api_server import Api, serve_api
from tests.invariants import check_all
from tests.procs import wait_for
from tests.running import most_at_once, running_spans
from turnkeep.client import ApiError
from turnkeep.client import Client as TurnkeepClient
from turnkeep.runtime.states import TurnState

SLOW = {"TURNKEEP_TEST_TOOL_SLEEP": "0.3"}


def _admit_all(client, tenant: str, agent: str, n: int, text: str = "steps=2") -> list:
    turns = []
    for i in range(n):
        sid = f"s-{agent}-{i}-{uuid.uuid4().hex[:6]}"
        turns.append((tenant, sid, client.admit(tenant, sid, agent, text)))
    return turns


def _all_completed(client, turns: list, timeout: float = 120) -> None:
    for tenant, sid, tid in turns:
        assert client.wait_terminal(tenant, sid, tid, timeout).state is TurnState.COMPLETED


def test_a_tenants_max_running_holds_the_excess_queued_and_runs_it_all(
    procs, client, store, tenant, database_url
) -> None:
    store.max_running.set_limits(tenant, max_running=2, updated_by="test")
    worker = procs.worker(SLOW, concurrency=6)
    turns = _admit_all(client, tenant, "counter", 8)
    _all_completed(client, turns)
    spans = running_spans(store, turns)
    # bounded by the limit, and up to it: six threads would have run more
    assert most_at_once(spans) == 2, spans
    assert check_all(database_url, tenants=[tenant], accepted=turns) == []
    # no polling: each session was held at most a few times (once per refusal, and a
    # wake may find the slot taken again), not once per scan or per freed slot of all
    limited = worker.text().count("'limited'")
    assert limited <= 3 * len(turns), limited


def test_an_agents_max_running_bounds_its_turns_alone(
    procs, client, store, tenant, database_url
) -> None:
    procs.worker(SLOW, concurrency=6)
    capped = _admit_all(client, tenant, "capped", 6, "steps=3")  # max_running=2
    free = _admit_all(client, tenant, "counter", 2, "steps=3")
    _all_completed(client, [*capped, *free])
    capped_spans = running_spans(store, capped)
    assert most_at_once(capped_spans) == 2, capped_spans
    # the tenant's other agents were not held back by it: more ran at once in all
    assert most_at_once([*capped_spans, *running_spans(store, free)]) > 2
    assert check_all(database_url, tenants=[tenant], accepted=[*capped, *free]) == []


def test_a_sigkilled_worker_holding_a_slot_neither_loses_it_nor_hands_it_out_twice(
    procs, client, store, tenant, database_url
) -> None:
    store.max_running.set_limits(tenant, max_running=1, updated_by="test")
    victim = procs.worker({"TURNKEEP_TEST_TOOL_SLEEP": "3"}, concurrency=4)
    procs.beat()
    turns = _admit_all(client, tenant, "counter", 3, "steps=1")

    def one_running() -> object:
        running = [t for t in turns if store.reads.get_turn(*t).state is TurnState.RUNNING]
        return running[0] if running else None

    holder = wait_for(one_running, 60, what="a turn holding the slot")
    victim.signal(signal.SIGKILL)
    procs.worker(SLOW, concurrency=4)
    _all_completed(client, turns, timeout=180)
    spans = running_spans(store, turns)
    # the killed turn kept its slot until it was taken over and ended; nobody else ran
    # meanwhile, and every turn ran in the end
    assert most_at_once(spans) == 1, spans
    assert store.reads.get_turn(*holder).attempt == 2  # type: ignore[misc]
    assert check_all(database_url, tenants=[tenant], accepted=turns) == []


@pytest.fixture(scope="module")
def api(service_env: dict[str, str]) -> Iterator[Api]:
    broker = broker_or(service_env["TURNKEEP_REDIS_URL"])
    with serve_api(service_env, agents="tests.agents", broker_url=broker) as handle:
        yield handle


def test_a_tenants_admin_declares_its_limit_and_the_workers_hold_to_it(
    api: Api, procs, store, database_url
) -> None:
    admin = TurnkeepClient(api.url, api.more["a-admin"])
    member = TurnkeepClient(api.url, api.token_a)
    try:
        with pytest.raises(ApiError) as refused:
            member.max_running.set(1)
        assert (refused.value.status, refused.value.code) == (403, "forbidden_role")
        declared = admin.max_running.set(1)
        assert (declared.max_running, declared.effective_max_running) == (1, 1)
        assert declared.updated_by == "erin"
        assert declared.may_declare is True
        # any role reads it; only an admin may declare it (what the console offers)
        assert member.max_running.get() == declared.model_copy(update={"may_declare": False})
        # another tenant's is its own: none
        other = TurnkeepClient(api.url, api.token_b).max_running.get()
        assert (other.max_running, other.updated_by) == (None, None)
        assert store.max_running.get_limits(api.tenant_a).max_running == 1
        procs.worker(SLOW, concurrency=4)
        turns = []
        for i in range(4):
            sid = f"s-api-{i}-{uuid.uuid4().hex[:6]}"
            turns.append((api.tenant_a, sid, member.turns.admit(sid, "counter", "steps=2").turn_id))
        for t in turns:
            assert member.turns.wait(t[1], t[2], timeout=120).state == "completed"
        assert most_at_once(running_spans(store, turns)) == 1
        cleared = admin.max_running.set(None)
        assert (cleared.max_running, cleared.effective_max_running) == (None, None)
    finally:
        admin.close()
        member.close()
