"""Cost (runtime/pricing.py): each model call's cost on its outcome, usage and cost
added up on the turn and the session in the step's own statement, and a cost bound
that stops the turn (tests/agents.py ``spender``: $5 a tool-calling answer, a bound of
$12: the third call passes it)."""

from __future__ import annotations

import pytest

from turnkeep.runtime.states import TurnState


def test_a_cost_bound_stops_the_turn_and_usage_adds_up(procs, client, store, tenant, sid):
    procs.worker()
    tid = client.admit(tenant, sid, "spender", "steps=10")
    turn = client.wait_terminal(tenant, sid, tid)
    assert turn.state is TurnState.FAILED and turn.error["code"] == "budget_exceeded"
    assert "cost limit" in turn.error["message"]
    calls = [e for e in store.reads.turn_events(tenant, sid, tid) if e.type == "model.completed"]
    # $1 an output token (and a thousandth of a millionth an input one)
    assert [e.data["cost"] for e in calls] == [pytest.approx(5.0, abs=1e-3)] * 3
    assert all("charged_cost" not in e.data for e in calls)  # no attempt was lost
    assert turn.usage["cost_usd"] == pytest.approx(15.0, abs=1e-3)
    assert turn.usage["output_tokens"] == 15
    assert turn.usage["input_tokens"] == sum(e.data["usage"]["input_tokens"] for e in calls)
    session = store.reads.get_session(tenant, sid)
    assert session.usage == turn.usage  # the session's only turn
    # a second turn adds to the session, not to the first turn
    second = client.admit(tenant, sid, "spender", "steps=0")
    done = client.wait_terminal(tenant, sid, second)
    assert done.state is TurnState.COMPLETED, done.error
    after = store.reads.get_session(tenant, sid).usage
    assert after["cost_usd"] == pytest.approx(turn.usage["cost_usd"] + done.usage["cost_usd"])
    assert done.usage["cost_usd"] > 1
    assert store.reads.get_turn(tenant, sid, tid).usage == turn.usage
