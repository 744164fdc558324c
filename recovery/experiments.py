"""The experiments' driver (docs/evaluation.md, "Experiments"): one pass over one
running experiment moves each of its cases on, through the same submit path and the
same workers as any turn.

A pass, in order, each step a statement of its own that is safe to run twice:

1. every case whose turn runs: an ended turn is scored (its journal read, its
   assertions evaluated: runtime/evaluation/verdicts.py) by compare-and-swap from
   ``running``; a turn parked on approvals is answered as the run's policy says (any
   other wait cancels it: runtime/evaluation/approvals.py); a claimed case whose turn
   is not there (a crash between claim and admission, or a quota) is admitted now;
2. every case whose judge is due: its judge's turn admitted, or its verdict read
   (recovery/judging.py);
3. pending cases claimed, as many as the window has room for, and their turns
   admitted under ids derived from experiment and case (runtime/evaluation/case_ids.py),
   a case's files uploaded to its session (the turn's input names them) before its
   session is enqueued: a pass that died after the claim admits them on the next one,
   as a replay;
4. the experiment completed once every case is scored and judged.

Beat sends one advance per running experiment every ``TURNKEEP_EVAL_INTERVAL``
(``advance_due``); the API sends one when it creates an experiment, and a worker one
when a case's turn settles or parks (worker/turn.py). Two passes over
one experiment at once write each outcome once (each write compares and swaps), and
the claim holds the window (it locks the experiment's row). A worker that dies mid-pass
loses nothing: the rows say where the experiment is, and the next pass goes on.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import TypeAdapter

from turnkeep.assertions import Assertion, CaseInput
from turnkeep.evaluation import ApprovalPolicy, JudgeSpec
from turnkeep.recovery import judging
from turnkeep.runtime import input_groups
from turnkeep.runtime.admission import TurnInput
from turnkeep.runtime.agents.definition import AgentDefinition, DeployPolicy
from turnkeep.runtime.agents.registry import AgentRegistry
from turnkeep.runtime.evaluation import approvals, case_ids, verdicts
from turnkeep.runtime.evaluation.trajectory import Trajectory, trajectory
from turnkeep.runtime.hashing import sha256_hex
from turnkeep.runtime.obs import logs
from turnkeep.runtime.obs.faults import FaultPoint, hit
from turnkeep.runtime.settings import Settings, get_settings
from turnkeep.store import admission
from turnkeep.store.datasets import CaseRecord
from turnkeep.store.errors import (
    IdempotencyConflict,
    InputExpired,
    InputNotOpen,
    NotFound,
    QuotaExceeded,
    SessionAgentConflict,
    SessionDeleted,
    StoreError,
    TurnNotActive,
)
from turnkeep.store.experiments import ExperimentRecord, ResultRecord
from turnkeep.store.facade import Store
from turnkeep.store.records import TurnRecord

log = logging.getLogger(__name__)

ASSERTIONS: TypeAdapter[list[Assertion]] = TypeAdapter(list[Assertion])

Enqueue = Callable[[str, str], None]


@dataclass
class Report:
    """What one pass did."""

    admitted: int = 0
    scored: int = 0
    answered: int = 0
    completed: bool = False


def advance_due(store: Store, send: Enqueue, *, limit: int) -> int:
    """Beat's pass: one advance sent for each running experiment (least recently
    advanced first, at most ``limit``). Sends only: the advances run on the workers."""
    due = store.experiments.scan_experiments(limit=limit)
    for tenant_id, experiment_id in due:
        send(tenant_id, experiment_id)
    return len(due)


@dataclass
class Pass:
    """One pass over one experiment."""

    store: Store
    agents: AgentRegistry
    enqueue: Enqueue
    exp: ExperimentRecord
    cases: dict[str, CaseRecord]
    #: what its admissions are bound by (the tenant's quota and TTL: store/admission.py)
    settings: Settings
    report: Report

    @property
    def who(self) -> str:
        """Who the answers and cancellations of the pass are recorded as."""
        return f"experiment:{self.exp.experiment_id}"

    def agent(self) -> AgentDefinition | None:
        """The experiment's definition, when this process serves it."""
        return self.agents.by_hash(self.exp.agent_hash)

    def admit(self, r: ResultRecord) -> None:
        agent = self.agent()
        if agent is None:
            log.warning("experiment %s: definition not served here", self.exp.experiment_id)
            return
        case = self.cases.get(r.case_id)
        if case is None:
            # erased with the session it was made from (docs/erasure.md): nothing to run
            self.score(r, None, refused="case_erased")
            return
        files = list(case.input.get("attachments") or [])
        ids = [CaseInput.attachment_id(i) for i in range(len(files))]
        try:
            admitted = admission.admit(
                self.store,
                self.settings,
                admission.Ask(
                    source=admission.Source.EXPERIMENT,
                    tenant_id=self.exp.tenant_id,
                    session_id=r.session_id,
                    turn_id=r.turn_id,
                    by=self.exp.created_by,
                    agent_name=agent.name,
                    agent_hash=self.exp.agent_hash,
                    turn_input=TurnInput(list(case.input["messages"]), attachments=ids),
                    output_schema=agent.output_schema,
                    budget=None,
                    agent_version=agent.version,
                    # pinned: the experiment measures the version it names, and a newer
                    # one declared meanwhile must not take its turns over (runtime/deploys.py)
                    on_deploy=DeployPolicy.PINNED.value,
                ),
            )
        except QuotaExceeded:
            return  # never lost: claimed, no turn yet; the next pass admits it
        except (IdempotencyConflict, SessionAgentConflict) as exc:
            # its session holds another turn: nothing of this case can run there
            self.score(r, None, refused=exc.code)
            return
        except SessionDeleted:
            self.score(r, None, refused=case_ids.DELETED)
            return
        self.report.admitted += int(admitted.created)
        for aid, file in zip(ids, files, strict=True):
            self.attach(r.session_id, aid, file)
        admission.release(self.enqueue, admitted)

    def attach(self, session_id: str, aid: str, file: dict[str, Any]) -> None:
        """Upload one of the case's files to its session, as the upload's three
        statements do; each finds what a pass before it wrote and goes on from there."""
        data = base64.b64decode(file["data_base64"])
        digest = hashlib.sha256(data).hexdigest()
        tenant = self.exp.tenant_id
        self.store.attachments.insert_attachment(
            tenant,
            session_id,
            aid,
            filename=file["filename"],
            content_type=file["content_type"],
            size=len(data),
            sha256=digest,
        )
        self.store.attachments.attachment_content(tenant, session_id, aid, data=data, sha256=digest)
        self.store.attachments.attachment_ready(tenant, session_id, aid)

    def progress(self, r: ResultRecord) -> None:
        """A case whose turn was claimed: score it once ended, answer its wait, or admit
        it when its turn is not there; a case whose session has gone is ``deleted``."""
        try:
            turn: TurnRecord | None = self.store.reads.get_turn(
                self.exp.tenant_id, r.session_id, r.turn_id
            )
        except NotFound:
            turn = None
        # a tombstone cancels the session's turns and erases them after: asked only
        # of a turn that ended or is not there, so a running case costs no read
        if (turn is None or turn.state.terminal) and self.gone(r.session_id):
            self.score(r, None, refused=case_ids.DELETED)
            return
        if turn is None:
            self.admit(r)
            return
        if turn.state.terminal:
            self.score(r, turn)
        elif turn.awaiting_input:
            self.answer(turn)

    def gone(self, session_id: str) -> bool:
        """The session was deleted or expired (its tombstone): nothing of it is scored."""
        return self.store.reads.get_tombstone(self.exp.tenant_id, session_id) is not None

    def answer(self, turn: TurnRecord) -> None:
        policy = ApprovalPolicy.model_validate(self.exp.approvals)
        todo = approvals.answers(policy, turn.pending_input)
        t = (turn.tenant_id, turn.session_id, turn.turn_id)
        try:
            if todo.cancel:
                self.store.turns.request_cancel(*t, subject=self.who)
            elif turn.pending_input and turn.pending_input.is_group and todo.responses:
                answers = [
                    input_groups.GroupAnswer(rid, resp, sha256_hex(resp))
                    for rid, resp in todo.responses.items()
                ]
                self.store.waits.resolve_inputs(*t, answers, subject=self.who)
            elif todo.responses:
                [(rid, resp)] = todo.responses.items()
                self.store.turns.resolve_input(*t, rid, response=resp, subject=self.who)
            else:
                return  # the runtime answers it (a timer, a delegation)
        except (InputNotOpen, InputExpired, TurnNotActive, NotFound):
            return  # answered, expired or ended meanwhile: the next pass sees how
        self.report.answered += 1
        self.enqueue(turn.tenant_id, turn.session_id)

    def trajectory(self, turn: TurnRecord) -> Trajectory:
        events = self.store.reads.turn_events(turn.tenant_id, turn.session_id, turn.turn_id)
        return trajectory(
            events,
            state=turn.state.value,
            result=turn.result,
            error=turn.error,
            usage=turn.usage,
            output_schema=turn.output_schema,
        )

    def score(self, r: ResultRecord, turn: TurnRecord | None, refused: str = "") -> None:
        case = self.cases.get(r.case_id)
        assertions = ASSERTIONS.validate_python([] if case is None else case.assertions)
        if turn is None:
            score: dict[str, Any] = {"turn_state": None, "error_code": refused, "assertions": []}
            passed = False
        else:
            t = self.trajectory(turn)
            results = verdicts.evaluate_all(assertions, t)
            passed = all(a.passed for a in results)
            score = score_json(t, results, turn.agent_version)
        judge = self.judge_spec()
        pending = None if judge is None or turn is None else judging.pending(self.exp, r)
        with logs.bound(session=r.session_id):
            hit(FaultPoint.BEFORE_CASE_SCORE)
            if self.store.experiments.score_case(
                self.exp.tenant_id,
                self.exp.experiment_id,
                r.case_id,
                passed=passed,
                score=score,
                judge=pending,
            ):
                self.report.scored += 1
            hit(FaultPoint.AFTER_CASE_SCORE)

    def judge_spec(self) -> JudgeSpec | None:
        return None if self.exp.judge is None else JudgeSpec.model_validate(self.exp.judge)


def score_json(t: Trajectory, results: list[Any], agent_version: str) -> dict[str, Any]:
    """What a scored case keeps: its turn's outcome and figures, each assertion's result
    (turnkeep/evaluation.py ``CaseResult``'s fields)."""
    return {
        "turn_state": t.state,
        "error_code": t.error_code if t.state != "cancelled" else "cancelled",
        "assertions": [a.model_dump(mode="json") for a in results],
        "cost_usd": t.cost_usd,
        "tokens": t.tokens,
        "latency_ms": t.latency_ms,
        "steps": t.steps,
        "model_calls": t.model_calls,
        "tool_calls": t.tool_calls,
        "recovered": t.recovered,
        "agent_version": agent_version or None,
    }


def advance(
    store: Store,
    agents: AgentRegistry,
    enqueue: Enqueue,
    tenant_id: str,
    experiment_id: str,
    *,
    settings: Settings | None = None,
) -> Report:
    """One pass over one experiment (the module's docstring says what it does); its
    turns admitted under ``settings`` (the process's when None)."""
    report = Report()
    try:
        exp = store.experiments.get_experiment(tenant_id, experiment_id)
    except NotFound:
        return report
    if exp.state != "running":
        return report
    cases = {
        c.case_id: c
        for c in store.datasets.dataset_cases(tenant_id, exp.dataset, exp.dataset_version)
    }
    p = Pass(store, agents, enqueue, exp, cases, settings or get_settings(), report)
    for r in store.experiments.running_cases(tenant_id, experiment_id):
        with logs.bound(tenant=tenant_id, session=r.session_id):
            try:
                if r.state == "running":
                    p.progress(r)
                else:
                    judging.progress(p, r)
            except StoreError as exc:  # Postgres away: the next pass goes on from here
                log.warning("experiment %s, case %s: %s", experiment_id, r.case_id, exc.code)
                return _stopped(store, tenant_id, experiment_id, report)
    claimed = (
        store.experiments.claim_cases(tenant_id, experiment_id) if p.agent() is not None else []
    )
    with logs.bound(tenant=tenant_id, session=claimed[0].session_id if claimed else ""):
        hit(FaultPoint.AFTER_CASE_CLAIM)
    for r in claimed:
        with logs.bound(tenant=tenant_id, session=r.session_id):
            try:
                p.admit(r)
            except StoreError as exc:  # claimed, not admitted: the next pass admits it
                log.warning("experiment %s, case %s: %s", experiment_id, r.case_id, exc.code)
                return _stopped(store, tenant_id, experiment_id, report)
    report.completed = store.experiments.finish_experiment(tenant_id, experiment_id)
    if not report.completed:
        store.experiments.experiment_advanced(tenant_id, experiment_id)
    return report


def _stopped(store: Store, tenant_id: str, experiment_id: str, report: Report) -> Report:
    """A pass that stopped at a case still sends its experiment to the back of beat's
    scan: one case that fails every pass must not keep the experiment at the head of
    the scan's page, where enough of them would crowd every other experiment out."""
    with contextlib.suppress(StoreError):  # Postgres away: no pass advances anything now
        store.experiments.experiment_advanced(tenant_id, experiment_id)
    return report
