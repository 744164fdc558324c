"""A case's judge, moved on by the experiments' driver (recovery/experiments.py): once
the case is scored, the judge agent's turn is admitted (session and turn
``judge.<experiment>.<case>``, so a pass that runs again admits it once), and once that
turn ended its verdict is read (runtime/evaluation/judge.py). Its cost is the judge's,
counted apart; its verdict sits beside the case's assertions and never changes them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from turnkeep.evaluation import JudgeSpec
from turnkeep.runtime.admission import TurnInput
from turnkeep.runtime.agents.definition import DeployPolicy
from turnkeep.runtime.agents.registry import AgentRegistry
from turnkeep.runtime.errors import UnknownAgent
from turnkeep.runtime.evaluation import case_ids, judge
from turnkeep.runtime.evaluation.trajectory import Trajectory
from turnkeep.runtime.settings import Settings
from turnkeep.store import admission
from turnkeep.store.datasets import CaseRecord
from turnkeep.store.errors import (
    IdempotencyConflict,
    NotFound,
    QuotaExceeded,
    SessionAgentConflict,
    SessionDeleted,
)
from turnkeep.store.experiments import STATES, ExperimentRecord, ResultRecord
from turnkeep.store.facade import Store
from turnkeep.store.records import TurnRecord


class Driving(Protocol):
    """What the judge needs of the driver's pass (recovery/experiments.py ``Pass``)."""

    @property
    def store(self) -> Store: ...
    @property
    def agents(self) -> AgentRegistry: ...
    @property
    def enqueue(self) -> Callable[[str, str], None]: ...
    @property
    def exp(self) -> ExperimentRecord: ...
    @property
    def cases(self) -> dict[str, CaseRecord]: ...
    @property
    def settings(self) -> Settings: ...

    def trajectory(self, turn: TurnRecord) -> Trajectory: ...

    def judge_spec(self) -> JudgeSpec | None: ...

    def answer(self, turn: TurnRecord) -> None: ...

    def gone(self, session_id: str) -> bool: ...


def pending(exp: ExperimentRecord, r: ResultRecord) -> dict[str, Any]:
    """A case's judge before its turn is admitted."""
    sid = case_ids.judge_session(exp.experiment_id, r.case_id)
    return {"session_id": sid, "turn_id": sid}


def _move(p: Driving, r: ResultRecord, to: str, judged: dict[str, Any]) -> None:
    p.store.experiments.judge_moved(
        p.exp.tenant_id,
        p.exp.experiment_id,
        r.case_id,
        from_state=str(r.judge_state),
        to_state=STATES[f"judge_{to}"],
        judge=judged,
    )


def progress(p: Driving, r: ResultRecord) -> None:
    """Admit a due judge's turn, or read the verdict of one that ended."""
    spec = p.judge_spec()
    judged = dict(r.judge or {})
    if spec is None or not judged:
        return
    if r.judge_state == STATES["judge_pending"]:
        _admit(p, r, spec, judged)
        return
    try:
        turn = p.store.reads.get_turn(p.exp.tenant_id, judged["session_id"], judged["turn_id"])
    except NotFound:
        error = case_ids.DELETED if p.gone(judged["session_id"]) else "judge turn not found"
        _move(p, r, "failed", {**judged, "error": error})
        return
    if turn.awaiting_input:
        p.answer(turn)
    if not turn.state.terminal:
        return
    if p.gone(judged["session_id"]):  # nothing of a deleted session is read
        _move(p, r, "failed", {**judged, "error": case_ids.DELETED})
        return
    cost = float((turn.usage or {}).get("cost_usd") or 0.0)
    if turn.state.value != "completed":
        code = str((turn.error or {}).get("code") or turn.state.value)
        _move(p, r, "failed", {**judged, "error": code, "cost_usd": cost})
        return
    verdict, score, reason = judge.verdict((turn.result or {}).get("output"))
    done = {**judged, "verdict": verdict, "score": score, "reason": reason, "cost_usd": cost}
    _move(p, r, "done", done)


def _admit(p: Driving, r: ResultRecord, spec: JudgeSpec, judged: dict[str, Any]) -> None:
    exp = p.exp
    try:
        agent = p.agents.get(spec.agent, spec.version)
    except UnknownAgent:
        _move(p, r, "failed", {**judged, "error": "unknown_agent"})
        return
    try:
        case_turn = p.store.reads.get_turn(exp.tenant_id, r.session_id, r.turn_id)
    except NotFound:  # the case's session was erased after it was scored
        _move(p, r, "failed", {**judged, "error": case_ids.DELETED})
        return
    if p.gone(r.session_id):
        _move(p, r, "failed", {**judged, "error": case_ids.DELETED})
        return
    case = p.cases[r.case_id]
    messages = judge.prompt(case.input["messages"], p.trajectory(case_turn), spec.rubric)
    try:
        admitted = admission.admit(
            p.store,
            p.settings,
            admission.Ask(
                source=admission.Source.JUDGE,
                tenant_id=exp.tenant_id,
                session_id=judged["session_id"],
                turn_id=judged["turn_id"],
                by=exp.created_by,
                agent_name=agent.name,
                agent_hash=agent.definition_hash,
                turn_input=TurnInput(messages),
                output_schema=judge.VERDICT_SCHEMA,
                budget=None,
                agent_version=agent.version,
                # pinned: the experiment measures the version it names, and a newer one
                # declared meanwhile must not take its turns over (runtime/deploys.py)
                on_deploy=DeployPolicy.PINNED.value,
            ),
        )
    except QuotaExceeded:
        return  # the next pass admits it
    except (IdempotencyConflict, SessionAgentConflict) as exc:
        _move(p, r, "failed", {**judged, "error": exc.code})
        return
    except SessionDeleted:
        _move(p, r, "failed", {**judged, "error": case_ids.DELETED})
        return
    admission.release(p.enqueue, admitted)
    _move(p, r, "running", judged)
