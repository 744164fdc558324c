"""``ctx.step`` on real Postgres and a real worker: the tool_steps statements (first
writer wins, racing writers agree, a tenant sees its own rows only) and a turn whose
tool takes two steps (tests/agents.py ``two_steps``)."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

import psycopg
import pytest

from tests.invariants import check_all
from turnkeep.runtime.states import TurnState
from turnkeep.store.sql import q


def _pg(url: str) -> str:
    return url.replace("postgresql+psycopg://", "postgresql://")


def _runs(database_url: str, key: str) -> list[int]:
    """The pids that ran the step whose log key (``<idempotency key>#<name>``) is ``key``."""
    with psycopg.connect(_pg(database_url)) as conn:
        rows = conn.execute(
            "SELECT pid FROM test_tool_calls WHERE key = %s ORDER BY at", (key,)
        ).fetchall()
    return [r[0] for r in rows]


@pytest.fixture
def turn(client, tenant, sid) -> str:
    """An admitted turn (not enqueued): its session is what tool_steps rows belong to."""
    return client.admit(tenant, sid, "stepper", "go", enqueue=False)


def test_the_first_record_wins_and_a_later_one_gets_it_back(store, tenant, sid, turn):
    assert store.tool_steps.get_tool_step(tenant, sid, turn, 2, "pay") is None
    first, won = store.tool_steps.record_tool_step(tenant, sid, turn, 2, "pay", {"id": "ch_1"})
    assert won and first.result == {"id": "ch_1"} and first.step == 2
    again, won_again = store.tool_steps.record_tool_step(
        tenant, sid, turn, 2, "pay", {"id": "ch_2"}
    )
    assert not won_again and again == first
    assert store.tool_steps.get_tool_step(tenant, sid, turn, 2, "pay") == first
    # another step of the call, or the same name at another step, is another row
    assert store.tool_steps.record_tool_step(tenant, sid, turn, 3, "pay", None)[0].result is None
    assert store.tool_steps.get_tool_step(tenant, sid, turn, 3, "pay").result is None


def test_racing_records_agree_on_one_result(store, tenant, sid, turn):
    def record(i: int) -> tuple[object, bool]:
        rec, won = store.tool_steps.record_tool_step(tenant, sid, turn, 2, "race", {"by": i})
        return rec.result, won

    with ThreadPoolExecutor(8) as pool:
        outcomes = list(pool.map(record, range(16)))
    assert len({json.dumps(r) for r, _ in outcomes}) == 1
    assert sum(won for _, won in outcomes) == 1


def test_another_tenant_sees_no_tool_step(store, tenant, sid, turn):
    store.tool_steps.record_tool_step(tenant, sid, turn, 2, "pay", {"id": "ch_1"})
    params = {"tenant_id": tenant, "session_id": sid, "turn_id": turn, "step": 2, "name": "pay"}
    # as if the statement had been run for another tenant: row-level security answers
    assert store.db.rows(q("get_tool_step"), params, tenant="someone-else") == []
    assert store.tool_steps.get_tool_step("someone-else", sid, turn, 2, "pay") is None


def test_a_tool_with_two_steps_records_both_and_runs_each_once(
    procs, client, store, tenant, sid, database_url
):
    worker = procs.worker()
    tid = client.admit(tenant, sid, "stepper", "go")
    done = client.wait_terminal(tenant, sid, tid, timeout=30)
    assert done.state is TurnState.COMPLETED, done.error
    key = f"{tenant}/{sid}/{tid}/2"
    assert _runs(database_url, f"{key}#first") == [worker.pid]
    assert _runs(database_url, f"{key}#second") == [worker.pid]
    first = store.tool_steps.get_tool_step(tenant, sid, tid, 2, "first")
    second = store.tool_steps.get_tool_step(tenant, sid, tid, 2, "second")
    assert first.result == {"step": "first", "pid": worker.pid}
    assert second.result == {"step": "second", "pid": worker.pid}
    (completed,) = [
        e for e in store.reads.turn_events(tenant, sid, tid) if e.type == "tool.completed"
    ]
    assert json.loads(completed.data["message"]["content"]) == {
        "first": first.result,
        "second": second.result,
    }
    assert check_all(database_url, tenants=[tenant], accepted=[(tenant, sid, tid)]) == []
