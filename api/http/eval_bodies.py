"""The evaluation plane's JSON bodies as the OpenAPI document states them: closed
subclasses of turnkeep/evaluation.py's and turnkeep/assertions.py's models (defined
once there), as api/http/bodies.py does for the turn's. The routes build their bodies
as dicts (api/service/datasets.py, experiments.py, promotions.py); these models never
validate a response, tests/integration/test_openapi.py holds them to what is answered."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from turnkeep import assertions, evaluation


class _Closed(BaseModel):
    model_config = ConfigDict(extra="forbid")


class CaseSource(assertions.CaseSource, _Closed):
    __doc__ = assertions.CaseSource.__doc__


class Case(assertions.Case, _Closed):
    __doc__ = assertions.Case.__doc__
    source: CaseSource | None = None


class DatasetVersion(evaluation.DatasetVersion, _Closed):
    __doc__ = evaluation.DatasetVersion.__doc__
    cases: list[Case] = []  # type: ignore[assignment]


class DatasetInfo(evaluation.DatasetInfo, _Closed):
    __doc__ = evaluation.DatasetInfo.__doc__


class DatasetList(evaluation.DatasetList, _Closed):
    __doc__ = evaluation.DatasetList.__doc__
    datasets: list[DatasetInfo]  # type: ignore[assignment]


class DatasetVersions(evaluation.DatasetVersions, _Closed):
    __doc__ = evaluation.DatasetVersions.__doc__
    versions: list[DatasetVersion]  # type: ignore[assignment]


class AssertionResult(evaluation.AssertionResult, _Closed):
    __doc__ = evaluation.AssertionResult.__doc__


class JudgeResult(evaluation.JudgeResult, _Closed):
    __doc__ = evaluation.JudgeResult.__doc__


class CaseResult(evaluation.CaseResult, _Closed):
    __doc__ = evaluation.CaseResult.__doc__
    assertions: list[AssertionResult] = []  # type: ignore[assignment]
    judge: JudgeResult | None = None


class ExperimentSummary(evaluation.ExperimentSummary, _Closed):
    __doc__ = evaluation.ExperimentSummary.__doc__


class Experiment(evaluation.Experiment, _Closed):
    __doc__ = evaluation.Experiment.__doc__
    summary: ExperimentSummary
    results: list[CaseResult] = []  # type: ignore[assignment]


class ExperimentList(evaluation.ExperimentList, _Closed):
    __doc__ = evaluation.ExperimentList.__doc__
    experiments: list[Experiment]  # type: ignore[assignment]


class AssertionChange(evaluation.AssertionChange, _Closed):
    __doc__ = evaluation.AssertionChange.__doc__


class CaseComparison(evaluation.CaseComparison, _Closed):
    __doc__ = evaluation.CaseComparison.__doc__
    assertions: list[AssertionChange] = []  # type: ignore[assignment]


class Comparison(evaluation.Comparison, _Closed):
    __doc__ = evaluation.Comparison.__doc__
    a: Experiment
    b: Experiment
    cases: list[CaseComparison]  # type: ignore[assignment]


class PromotionCheck(evaluation.PromotionCheck, _Closed):
    __doc__ = evaluation.PromotionCheck.__doc__


class Promotion(evaluation.Promotion, _Closed):
    __doc__ = evaluation.Promotion.__doc__
    checks: list[PromotionCheck]  # type: ignore[assignment]


class AgentPromotions(evaluation.AgentPromotions, _Closed):
    __doc__ = evaluation.AgentPromotions.__doc__
    promotions: list[Promotion]  # type: ignore[assignment]
