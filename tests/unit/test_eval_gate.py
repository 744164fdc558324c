"""Promotion gates and the default version (runtime/evaluation/gate.py,
runtime/agents/promotion.py), an experiment's figures and a comparison
(runtime/evaluation/summary.py): pure, against experiments made up here."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from turnkeep.evaluation import AssertionResult, CaseResult, Experiment, JudgeResult
from turnkeep.runtime.agents.definition import AgentDefinition
from turnkeep.runtime.agents.promotion import PromotionPolicy, default_version
from turnkeep.runtime.agents.registry import AgentRegistry
from turnkeep.runtime.errors import DefinitionError
from turnkeep.runtime.evaluation.gate import Evidence, checks
from turnkeep.runtime.evaluation.summary import compare, summarise

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def _result(case: str, *passed: bool, none_of: bool = True, **kw: Any) -> CaseResult:
    asserted = [
        AssertionResult(index=i, kind="tool_called", category="trajectory", passed=p, detail="")
        for i, p in enumerate(passed)
    ]
    asserted.append(
        AssertionResult(
            index=len(passed), kind="never_called", category="none_of", passed=none_of, detail=""
        )
    )
    fields: dict[str, Any] = {
        "case_id": case,
        "ordinal": 1,
        "state": "scored",
        "session_id": f"eval.x.{case}",
        "turn_id": f"eval.x.{case}",
        "turn_state": "completed",
        "passed": all(passed) and none_of,
        "assertions": asserted,
        "cost_usd": 0.5,
        "tokens": 10,
        "latency_ms": 100,
        "steps": 3,
    }
    fields.update(kw)
    return CaseResult.model_validate(fields)


def _exp(eid: str, version: str, results: list[CaseResult], **kw: Any) -> Experiment:
    fields: dict[str, Any] = {
        "experiment_id": eid,
        "dataset": "core",
        "dataset_version": 1,
        "agent": "support",
        "agent_version": version,
        "definition_hash": "h" + version,
        "state": "completed",
        "approvals": {},
        "concurrency": 4,
        "recovery": False,
        "created_by": "alice",
        "created_at": NOW,
        "summary": summarise(results),
        "results": results,
    }
    fields.update(kw)
    return Experiment.model_validate(fields)


OLD = [_result("a", True), _result("b", False), _result("c", True), _result("d", True)]
NEW = [_result("a", True), _result("b", True), _result("c", True), _result("d", False)]
POLICY = PromotionPolicy(agent="support", datasets=("core",), min_pass_rate=0.7, max_regression=0.1)


def test_figures_and_a_comparison():
    judged = JudgeResult(
        state="done", session_id="j", turn_id="j", verdict="pass", score=0.5, cost_usd=2.0
    )
    failed = _result("e", True, turn_state="failed", error_code="budget_exceeded", judge=judged)
    s = summarise([*OLD, failed, _result("f", True, state="pending", passed=None)])
    assert (s.cases, s.scored, s.passed, s.failed, s.pass_rate) == (6, 5, 4, 1, 0.8)
    assert s.failures == {"budget_exceeded": 1} and s.none_of_clean is True
    assert (s.cost_usd, s.judge_cost_usd, s.judge_mean, s.judged) == (2.5, 2.0, 0.5, 1)
    c = compare(_exp("x1", "1", OLD), _exp("x2", "2", NEW))
    assert [(x.case_id, x.change) for x in c.cases] == [
        ("a", "same"), ("b", "fixed"), ("c", "same"), ("d", "regressed"),
    ]  # fmt: skip
    assert (c.fixed, c.regressed, c.pass_rate_delta) == (1, 1, 0.0)
    assert [(x.index, x.a, x.b) for x in c.cases[1].assertions] == [(0, False, True)]
    assert c.a.results == [] and c.b.results == []  # side by side, not twice over


def _names(found: list[Any]) -> dict[str, bool]:
    return {c.check: c.passed for c in found}


def test_a_candidate_above_the_policy_passes_every_check():
    ev = Evidence("core", 1, candidate=_exp("x2", "2", NEW), default=_exp("x1", "1", OLD))
    found = checks(POLICY, "2", "1", [ev])
    assert _names(found) == {
        "experiment": True, "min_pass_rate": True, "no_regression": True, "none_of_clean": True,
    }  # fmt: skip
    assert found[2].experiments == ["x2", "x1"]


def test_each_check_fails_on_its_own():
    strict = PromotionPolicy(agent="support", datasets=("core",), min_pass_rate=0.9)
    worse = [*NEW[:3], _result("d", True, none_of=False)]
    ev = Evidence("core", 1, candidate=_exp("x2", "2", worse), default=_exp("x1", "1", NEW))
    assert _names(checks(strict, "2", "1", [ev])) == {
        "experiment": True, "min_pass_rate": False, "no_regression": True, "none_of_clean": False,
    }  # fmt: skip
    regress = Evidence("core", 1, candidate=_exp("x2", "2", OLD[:1] + [_result("b", False)] * 3),
                       default=_exp("x1", "1", NEW))  # fmt: skip
    assert not _names(checks(POLICY, "2", "1", [regress]))["no_regression"]
    no_default = Evidence("core", 1, candidate=_exp("x2", "2", NEW))
    assert not _names(checks(POLICY, "2", "1", [no_default]))["no_regression"]
    # the default itself needs no experiment of another version to compare with
    assert _names(checks(POLICY, "1", "1", [no_default]))["no_regression"]
    assert _names(checks(POLICY, "2", "1", [Evidence("core", 1)])) == {"experiment": False}
    missing = checks(POLICY, "2", "1", [Evidence("core", None)])
    assert (missing[0].passed, missing[0].detail) == (False, "no dataset named 'core'")


def test_the_recovery_check_needs_a_drill_that_recovered_with_the_same_results():
    policy = PromotionPolicy(agent="support", datasets=("core",), min_pass_rate=0.5, recovery=True)
    cand = _exp("x2", "2", NEW)
    recovered = [
        _result(r.case_id, *(a.passed for a in r.assertions[:-1]), recovered=1) for r in NEW
    ]
    same = _exp("d1", "2", recovered, recovery=True)
    assert _names(checks(policy, "2", "2", [Evidence("core", 1, candidate=cand, drill=same)]))[
        "recovery"
    ]
    calm = _exp("d2", "2", NEW, recovery=True)  # nothing was taken over: no drill at all
    found = checks(policy, "2", "2", [Evidence("core", 1, candidate=cand, drill=calm)])
    assert not _names(found)["recovery"] and "took no turn over" in found[-1].detail
    other = _exp("d3", "2", [*recovered[:3], _result("d", True, recovered=1)], recovery=True)
    found = checks(policy, "2", "2", [Evidence("core", 1, candidate=cand, drill=other)])
    assert found[-1].detail == "cases with other results after recovery: d"
    assert not _names(checks(policy, "2", "2", [Evidence("core", 1, candidate=cand)]))["recovery"]


def _agent(version: str) -> AgentDefinition:
    return AgentDefinition(
        name="support", version=version, provider="demo", model="m", instructions=f"v{version}"
    )


def test_the_default_version_of_a_gated_agent_is_its_promoted_one():
    v1, v2, v3 = _agent("1"), _agent("2"), _agent("3")
    asked: list[int] = []

    def promoted(*versions: str) -> Any:
        def read() -> list[str]:
            asked.append(1)
            return list(versions)

        return read

    assert default_version([v1, v2], None, promoted("1")) is v2 and asked == []
    assert default_version([v1, v2], POLICY, promoted()) is v1
    assert default_version([v1, v2, v3], POLICY, promoted("2", "1")) is v2
    # a promoted version no longer declared: the one promoted before it
    assert default_version([v1, v3], POLICY, promoted("2", "1")) is v1
    registry = AgentRegistry([v1, v2], [POLICY])
    assert registry.policy("support") is POLICY and registry.default("support", promoted()) is v1
    with pytest.raises(DefinitionError):
        AgentRegistry([v1], [PromotionPolicy(agent="nobody")])
    with pytest.raises(DefinitionError):
        AgentRegistry([v1], [POLICY, POLICY])
    with pytest.raises(DefinitionError):
        PromotionPolicy(agent="support", min_pass_rate=1.5)


def test_every_agents_default_is_read_with_one_ask_for_the_gated_ones():
    v1, v2, v3 = _agent("1"), _agent("2"), _agent("3")
    other = AgentDefinition(name="other", version="1", provider="demo", model="m", instructions="o")
    asked: list[list[str]] = []

    def promoted(found: dict[str, list[str]]) -> Any:
        def read(names: list[str]) -> dict[str, list[str]]:
            asked.append(names)
            return found

        return read

    registry = AgentRegistry([v1, v2, v3, other], [POLICY])
    assert registry.defaults(promoted({"support": ["2", "1"]})) == {"other": other, "support": v2}
    assert asked == [["support"]]  # once, for the gated agent only
    # none promoted (a tenant that promoted nothing, or a public card): the first
    assert registry.defaults(promoted({})) == {"other": other, "support": v1}
    # nothing gated: nothing asked, each agent's latest
    asked.clear()
    assert AgentRegistry([v1, v2, other]).defaults(promoted({})) == {"other": other, "support": v2}
    assert asked == []


def test_a_gated_agents_turns_move_only_when_an_operator_asks():
    from turnkeep.runtime.deploys import MoveReason, move_at_safe_point

    v1, v2 = _agent("1"), _agent("2")
    gated, open_ = AgentRegistry([v1, v2], [POLICY]), AgentRegistry([v1, v2])
    assert move_at_safe_point(gated, v1, on_deploy="upgrade", upgrade_requested=False) is None
    moved = move_at_safe_point(open_, v1, on_deploy="upgrade", upgrade_requested=False)
    assert moved is not None and moved.reason is MoveReason.NEWER_VERSION
    asked = move_at_safe_point(gated, v1, on_deploy="upgrade", upgrade_requested=True)
    assert asked is not None and (asked.target, asked.reason) == (v2, MoveReason.REQUESTED)
