"""The wire shapes of the evaluation plane (docs/evaluation.md): datasets and their
versions, experiments and their per-case results, a comparison of two experiments,
and the journal of an agent's promotions. Defined once, as turnkeep/models.py's are:
the client parses answers with them, the OpenAPI document states them closed
(api/http/bodies.py ``closed``). The cases and assertions are turnkeep/assertions.py's."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from turnkeep.assertions import Case, Category
from turnkeep.models import Instant, TurnState, Wire

#: a dataset's name, an experiment's id (no dot: runtime/evaluation/ids.py)
DATASET_NAME = r"^[A-Za-z0-9_-]{1,64}$"
#: the highest version a dataset may reach (a version is a Postgres integer)
MAX_DATASET_VERSION = 1_000_000
EXPERIMENT_ID = r"^[A-Za-z0-9_-]{1,64}$"

ExperimentState = Literal["running", "completed", "cancelled"]
#: where a case of an experiment is: not admitted yet, its turn running, scored
ResultState = Literal["pending", "running", "scored"]
#: what the experiment's approval policy answers for a tool
Answer = Literal["approve", "deny"]


class ApprovalPolicy(BaseModel):
    """How an experiment's turns' approvals are answered: ``tools`` by name, every
    other by ``default``. Other requests (a question, credentials) are nobody's to
    answer in an experiment: the case's turn is cancelled."""

    model_config = ConfigDict(extra="forbid")

    default: Answer = "deny"
    tools: dict[str, Answer] = Field(default_factory=dict, max_length=200)


class JudgeSpec(BaseModel):
    """A judge agent scores each case after its turn ended (its own turn, its cost
    counted apart); ``rubric``: what it is told to look for."""

    model_config = ConfigDict(extra="forbid")

    agent: str = Field(min_length=1, max_length=128)
    version: str | None = Field(default=None, min_length=1, max_length=128)
    rubric: str | None = Field(default=None, max_length=4000, pattern=r"^[^\x00]*$")


class DatasetVersion(Wire):
    """One immutable version of a dataset (``cases`` only where asked for)."""

    dataset: str
    version: int
    cases_hash: str
    case_count: int
    created_by: str
    created_at: Instant
    cases: list[Case] = []


class DatasetInfo(Wire):
    name: str
    latest_version: int
    versions: int
    updated_at: Instant


class DatasetList(Wire):
    """``GET /v1/datasets``: the tenant's datasets by name."""

    datasets: list[DatasetInfo]


class DatasetVersions(Wire):
    """``GET /v1/datasets/{name}``: every version, newest first (without cases)."""

    dataset: str
    versions: list[DatasetVersion]


class AssertionResult(Wire):
    """One assertion of a case, against the case's turn."""

    index: int
    kind: str
    category: Category
    passed: bool
    detail: str


class JudgeResult(Wire):
    """A judge's score of a case: beside the assertions, never instead of them."""

    state: Literal["pending", "running", "done", "failed"]
    session_id: str
    turn_id: str
    verdict: Literal["pass", "fail"] | None = None
    score: float | None = None
    reason: str | None = None
    error: str | None = None
    cost_usd: float = 0.0


class CaseResult(Wire):
    """A case of an experiment: its turn, its outcome and figures, each assertion's
    result, and the judge's beside them. ``passed``: every assertion passed (null until
    scored)."""

    case_id: str
    ordinal: int
    state: ResultState
    session_id: str
    turn_id: str
    turn_state: TurnState | None = None
    error_code: str | None = None
    passed: bool | None = None
    assertions: list[AssertionResult] = []
    cost_usd: float = 0.0
    tokens: int = 0
    latency_ms: int | None = None
    steps: int = 0
    model_calls: int = 0
    tool_calls: int = 0
    #: attempts taken over after a worker died mid-turn (runtime/evaluation/trajectory.py)
    recovered: int = 0
    #: the version the turn ended on (a move mid-turn shows here)
    agent_version: str | None = None
    judge: JudgeResult | None = None


class ExperimentSummary(Wire):
    """An experiment's figures over its scored cases."""

    cases: int
    scored: int
    passed: int
    failed: int
    pass_rate: float | None = None
    #: every none-of assertion of every scored case passed (null: none scored)
    none_of_clean: bool | None = None
    cost_usd: float
    tokens: int
    steps: int
    latency_ms_mean: float | None = None
    latency_ms_max: int | None = None
    recovered: int
    #: failed turns by error code (cancelled ones as ``cancelled``)
    failures: dict[str, int]
    #: the judge's turns: their cost, apart, and the mean score of those it scored
    judge_cost_usd: float
    judge_mean: float | None = None
    judged: int = 0


class Experiment(Wire):
    """A dataset version run against an agent version through the submit path."""

    experiment_id: str
    dataset: str
    dataset_version: int
    agent: str
    agent_version: str
    definition_hash: str
    state: ExperimentState
    approvals: ApprovalPolicy
    judge: JudgeSpec | None = None
    concurrency: int
    #: a recovery drill: the promotion gate's recovery check reads it
    recovery: bool
    created_by: str
    created_at: Instant
    completed_at: Instant | None = None
    summary: ExperimentSummary
    results: list[CaseResult] = []


class ExperimentList(Wire):
    """``GET /v1/experiments``: newest first."""

    experiments: list[Experiment]


class AssertionChange(Wire):
    index: int
    kind: str
    a: bool | None = None
    b: bool | None = None


class CaseComparison(Wire):
    """One case in two experiments: ``change`` is ``fixed`` (fails in a, passes in b),
    ``regressed``, ``same``, ``only_a`` or ``only_b``."""

    case_id: str
    a: bool | None = None
    b: bool | None = None
    change: Literal["fixed", "regressed", "same", "only_a", "only_b"]
    assertions: list[AssertionChange] = []
    judge_a: float | None = None
    judge_b: float | None = None


class Comparison(Wire):
    """``GET /v1/experiments/{a}/compare/{b}``: side by side, case by case."""

    a: Experiment
    b: Experiment
    pass_rate_delta: float | None = None
    cost_usd_delta: float
    fixed: int
    regressed: int
    cases: list[CaseComparison]


class PromotionCheck(Wire):
    """One check of a promotion policy (runtime/evaluation/gate.py)."""

    check: str
    dataset: str | None = None
    passed: bool
    detail: str
    experiments: list[str] = []


class Promotion(Wire):
    """An entry of an agent's promotion journal: accepted (the version is the default
    for the tenant's new turns from then on) or refused, who, when, what was checked."""

    agent: str
    seq: int
    version: str
    definition_hash: str
    accepted: bool
    default_before: str | None = None
    by: str
    at: Instant
    checks: list[PromotionCheck]
    experiments: list[str]


class AgentPromotions(Wire):
    """``GET /v1/agents/{name}/promotions``: the version new turns get, the declared
    policy (null: the agent is not gated, its latest declared version is the default)
    and the journal, newest first."""

    agent: str
    gated: bool
    default_version: str
    policy: dict[str, Any] | None = None
    promotions: list[Promotion]
