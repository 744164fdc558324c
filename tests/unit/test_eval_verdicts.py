"""The evaluation plane's pure core (runtime/evaluation/): a journal read as a
trajectory, each assertion kind's verdict, a secret found without being kept,
assertions derived from a turn, an experiment's approvals, and its figures."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from pydantic import TypeAdapter, ValidationError

from turnkeep.assertions import Assertion, CaseSpec, NeverAppears
from turnkeep.evaluation import ApprovalPolicy
from turnkeep.runtime.evaluation import approvals, derive, verdicts
from turnkeep.runtime.evaluation.trajectory import Trajectory, trajectory
from turnkeep.runtime.pending import TurnWait

T0 = datetime(2026, 1, 1, tzinfo=UTC)
ONE: TypeAdapter[Assertion] = TypeAdapter(Assertion)


@dataclass
class Ev:
    type: str
    data: dict[str, Any] = field(default_factory=dict)
    step: int | None = None
    created_at: datetime = T0


def _model(step: int, text: str, *calls: tuple[str, dict[str, Any]]) -> Ev:
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if calls:
        message["tool_calls"] = [
            {"id": f"c{step}-{i}", "name": n, "arguments": a} for i, (n, a) in enumerate(calls)
        ]
    return Ev("model.completed", {"message": message}, step)


def _tool(step: int, call_id: str, text: str, **more: Any) -> Ev:
    message = {"role": "tool", "content": text, "tool_call_id": call_id}
    return Ev("tool.completed", {"message": message, **more}, step)


def _journal(answer: str = "Booked Rome.") -> list[Ev]:
    """lookup(Rome), book(Rome), then the answer; a second attempt took it over."""
    return [
        Ev("turn.accepted", {"input": {"messages": [{"role": "user", "content": "sekrit-in"}]}}),
        Ev("turn.started", {"attempt": 1}),
        _model(1, "looking", ("lookup", {"city": "Rome"})),
        _tool(2, "c1-0", '{"celsius": 20}'),
        Ev("turn.started", {"attempt": 2}),  # the worker died while the turn ran
        _model(3, "booking", ("book", {"city": "Rome"})),
        _tool(4, "c3-0", '{"booked": "Rome"}'),
        _model(5, answer),
        Ev("turn.completed", {"result": {"text": answer}}, created_at=T0 + timedelta(seconds=2)),
    ]


def _t(events: list[Ev] | None = None, **kw: Any) -> Trajectory:
    events = events if events is not None else _journal()
    answer = kw.pop("answer", "Booked Rome.")
    fields: dict[str, Any] = {
        "state": "completed",
        "result": {"text": answer},
        "error": None,
        "usage": {"input_tokens": 30, "output_tokens": 12, "cost_usd": 0.25},
        "output_schema": None,
    }
    fields.update(kw)
    return trajectory(events, **fields)


def _v(raw: dict[str, Any], t: Trajectory | None = None) -> bool:
    return verdicts.evaluate(ONE.validate_python(raw), t or _t())[0]


def test_a_journal_read_as_a_trajectory():
    t = _t()
    assert [(c.name, c.ran, c.step) for c in t.calls] == [("lookup", True, 1), ("book", True, 3)]
    assert (t.steps, t.model_calls, t.tool_calls, t.tokens, t.cost_usd) == (5, 3, 2, 42, 0.25)
    assert (t.latency_ms, t.recovered, t.text) == (2000, 1, "Booked Rome.")
    assert "sekrit-in" not in t.texts  # the admitted input is the user's own


def test_a_turn_parked_and_started_again_was_not_recovered():
    asked = Ev("input.requested", {"request_id": "r1", "kind": "approval", "call_id": "c1-0"})
    events = [
        Ev("turn.started", {"attempt": 1}),
        _model(1, "paying", ("pay", {"amount": 9})),
        asked,
        Ev("input.resolved", {"request_id": "r1", "response": {"approved": False}}),
        Ev("turn.started", {"attempt": 2}),
        _tool(2, "c1-0", "error: not approved"),
        _model(3, "not paid"),
    ]
    t = _t(events, answer="not paid")
    assert t.recovered == 0
    assert [(c.name, c.ran) for c in t.calls] == [("pay", False)]  # refused: never ran
    assert _v({"kind": "tool_called", "tool": "pay"}, t)
    assert not _v({"kind": "tool_not_called", "tool": "pay"}, t)
    assert _v({"kind": "never_called", "tool": "pay"}, t)


@pytest.mark.parametrize(
    ("assertion", "passed"),
    [
        ({"kind": "tool_called", "tool": "book"}, True),
        ({"kind": "tool_called", "tool": "book", "times": 2}, False),
        ({"kind": "tool_called", "tool": "lookup",
          "arguments": {"properties": {"city": {"const": "Rome"}}}}, True),
        ({"kind": "tool_called", "tool": "lookup",
          "arguments": {"properties": {"city": {"const": "Oslo"}}}}, False),
        ({"kind": "tool_not_called", "tool": "wipe"}, True),
        ({"kind": "tool_not_called", "tool": "book"}, False),
        ({"kind": "tool_order", "tools": ["lookup", "book"]}, True),
        ({"kind": "tool_order", "tools": ["book", "lookup"]}, False),
        ({"kind": "at_most", "of": "steps", "max": 5}, True),
        ({"kind": "at_most", "of": "tool_calls", "max": 1}, False),
        ({"kind": "at_most", "of": "tokens", "max": 41}, False),
        ({"kind": "at_most", "of": "cost_usd", "max": 0.25}, True),
        ({"kind": "outcome", "state": "completed"}, True),
        ({"kind": "outcome", "state": "failed", "code": "budget_exceeded"}, False),
        ({"kind": "output_contains", "text": "rome", "ignore_case": True}, True),
        ({"kind": "output_contains", "text": "rome"}, False),
        ({"kind": "output_matches", "pattern": "^Booked [A-Z]"}, True),
        ({"kind": "output_matches", "pattern": "Oslo"}, False),
        ({"kind": "output_equals", "value": "Booked Rome."}, True),
        ({"kind": "output_valid"}, False),  # not JSON
        ({"kind": "never_called", "tool": "book"}, False),
        ({"kind": "never_called", "tool": "wipe"}, True),
    ],
)  # fmt: skip
def test_each_assertion_kind_against_a_turn(assertion: dict[str, Any], passed: bool):
    assert _v(assertion) is passed


def test_output_assertions_read_the_parsed_output_and_fail_without_one():
    schema = {
        "type": "object",
        "properties": {"answer": {"type": "integer"}},
        "required": ["answer"],
    }
    with_output = _t(
        result={"text": '{"answer": 42}', "output": {"answer": 42}}, output_schema=schema
    )
    assert _v({"kind": "output_valid"}, with_output)
    assert _v({"kind": "output_equals", "value": {"answer": 42}}, with_output)
    assert not _v({"kind": "output_valid", "output_schema": {"type": "array"}}, with_output)
    failed = _t(state="failed", result=None, error={"code": "budget_exceeded", "message": "x"})
    assert _v({"kind": "outcome", "state": "failed", "code": "budget_exceeded"}, failed)
    assert not _v({"kind": "output_contains", "text": "x"}, failed)
    assert verdicts.evaluate(ONE.validate_python({"kind": "output_valid"}), failed)[1] == (
        "no output: the turn ended failed"
    )


def test_a_secret_is_found_by_its_salted_hash_alone():
    salt = "ab" * 16
    sealed = verdicts.seal(NeverAppears(secret="hunter2"), salt)
    assert isinstance(sealed, NeverAppears) and sealed.secret is None
    assert (sealed.salt, sealed.length) == (salt, 7)
    assert "hunter2" not in sealed.model_dump_json()
    leaky = _t(_journal("Your password is hunter2, right?"), answer="Your password is hunter2!")
    assert verdicts.evaluate(sealed, leaky) == (False, "the secret appears in the turn")
    assert verdicts.evaluate(sealed, _t())[0]
    # in a tool's result, deep in JSON: found too; the user's own input is not the turn's
    events = [*_journal(), _tool(6, "x", '{"token": "...hunter2..."}')]
    assert not verdicts.evaluate(sealed, _t(events))[0]
    assert verdicts.seal(ONE.validate_python({"kind": "outcome", "state": "completed"}), salt)


def test_a_bad_assertion_is_refused_where_it_is():
    for raw in (
        {"kind": "output_matches", "pattern": "("},
        {"kind": "never_appears"},
        {"kind": "never_appears", "secret": "abcd", "salt": "ab" * 16},
        {"kind": "tool_order", "tools": ["only-one"]},
        {"kind": "at_most", "of": "steps", "max": -1},
        {"kind": "nope"},
    ):
        with pytest.raises(ValidationError):
            ONE.validate_python(raw)
    bad = ONE.validate_python({"kind": "tool_called", "tool": "x", "arguments": {"type": 3}})
    assert [w for w, _ in verdicts.problems(bad)] == ["arguments"]
    with pytest.raises(ValidationError):
        CaseSpec.model_validate({"input": {"messages": [{"role": "user", "content": "a\x00"}]}})


def test_assertions_derived_from_a_turn():
    derived = derive.derive(_t(), ["trajectory", "output"])
    assert [a.model_dump(exclude_none=True) for a in derived] == [
        {"kind": "outcome", "state": "completed"},
        {"kind": "tool_order", "tools": ["lookup", "book"]},
        {"kind": "at_most", "of": "tool_calls", "max": 2.0},
        {"kind": "output_equals", "value": "Booked Rome."},
    ]
    # what they derive from passes them
    assert all(r.passed for r in verdicts.evaluate_all(derived, _t()))


def test_an_experiments_approvals_follow_its_policy():
    def req(rid: str, tool: str, kind: str = "approval") -> dict[str, Any]:
        return {"request_id": rid, "kind": kind, "tool": {"name": tool}}

    policy = ApprovalPolicy(default="deny", tools={"pay": "approve"})
    group = {**req("r1", "pay"), "group": [req("r1", "pay"), req("r2", "wipe")]}
    got = approvals.answers(policy, TurnWait.from_json(group))
    assert not got.cancel
    assert {k: v["approved"] for k, v in got.responses.items()} == {"r1": True, "r2": False}
    assert approvals.answers(policy, TurnWait.from_json(req("r3", "x", "question"))).cancel
    assert approvals.answers(policy, None) == approvals.Answers({})
    timer = approvals.answers(policy, TurnWait.from_json(req("r4", "nap", "timer")))
    assert (timer.responses, timer.cancel) == ({}, False)
    wipe = TurnWait.from_json(req("r5", "wipe"))
    assert approvals.answers(ApprovalPolicy(default="approve"), wipe).responses["r5"]["approved"]


def test_a_cases_turn_asks_its_driver_to_go_on_when_it_settles_or_parks():
    """The worker sends the experiment's advance as a case's turn ends or waits
    (worker/turn.py), so a case is scored without waiting for beat's pass; a turn of
    any other session sends nothing."""
    from tests.unit.fakes import FakeResources
    from tests.unit.test_executor import BANKER, DEMO, REGISTRY, T
    from turnkeep.runtime.settings import Settings
    from turnkeep.worker.lane import run_session

    ctx = FakeResources(agents=REGISTRY, settings=Settings(worker={"max_attempts": 3}))
    for sid, agent in (("eval.x1.c1", DEMO), ("plain", DEMO), ("eval.x1.c2", BANKER)):
        ctx.store.admit(T, sid, "u1", agent, "hello")
        run_session(ctx, T, sid)
    assert ctx.advances == [(T, "x1"), (T, "x1")]
