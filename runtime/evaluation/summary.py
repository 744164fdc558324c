"""An experiment's figures over its case results, and two experiments side by side,
case by case (pure: the service hands it the results it read, or the sums the store
added up in SQL for a listing)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from turnkeep.evaluation import (
    AssertionChange,
    CaseComparison,
    CaseResult,
    Comparison,
    Experiment,
    ExperimentSummary,
)

#: the failure a failed turn without an error code counts under, and a cancelled one's
FAILED = "failed"
CANCELLED = "cancelled"
#: the category of the assertions ``none_of_clean`` is about (turnkeep/assertions.py)
NONE_OF = "none_of"


@dataclass(frozen=True)
class Totals:
    """An experiment's sums over its cases, before any division or rounding: what
    ``totals`` adds up from the cases here and the store's ``list_experiments`` in SQL
    (store/sql/experiments.sql), so both become figures by the one ``figures``. Scored
    cases only, but ``cases`` (every case) and the judges' (every case judged)."""

    cases: int
    scored: int
    passed: int
    cost_usd: float
    tokens: int
    steps: int
    #: the scored cases' latencies that are known: their sum, how many, the largest
    latency_ms_sum: int
    latency_ms_count: int
    latency_ms_max: int | None
    recovered: int
    #: every none-of assertion passed (None: no case scored)
    none_of_clean: bool | None
    #: failed and cancelled turns by error code (``FAILED`` without one, ``CANCELLED``)
    failures: Mapping[str, int]
    judge_cost_usd: float
    #: the judges done with a score: their sum and how many
    judge_score_sum: float
    judged: int


def totals(results: Sequence[CaseResult]) -> Totals:
    scored = [r for r in results if r.state == "scored"]
    latencies = [r.latency_ms for r in scored if r.latency_ms is not None]
    failures: Counter[str] = Counter()
    for r in scored:
        if r.turn_state == "failed":
            failures[r.error_code or FAILED] += 1
        elif r.turn_state == "cancelled":
            failures[CANCELLED] += 1
    judged = [r.judge for r in results if r.judge is not None]
    scores = [j.score for j in judged if j.state == "done" and j.score is not None]
    none_of = [a.passed for r in scored for a in r.assertions if a.category == NONE_OF]
    return Totals(
        cases=len(results),
        scored=len(scored),
        passed=sum(1 for r in scored if r.passed),
        cost_usd=sum(r.cost_usd for r in scored),
        tokens=sum(r.tokens for r in scored),
        steps=sum(r.steps for r in scored),
        latency_ms_sum=sum(latencies),
        latency_ms_count=len(latencies),
        latency_ms_max=max(latencies) if latencies else None,
        recovered=sum(r.recovered for r in scored),
        none_of_clean=all(none_of) if scored else None,
        failures=failures,
        judge_cost_usd=sum(j.cost_usd for j in judged),
        judge_score_sum=sum(scores),
        judged=len(scores),
    )


def figures(t: Totals) -> ExperimentSummary:
    """The summary an experiment answers with, from its sums."""
    return ExperimentSummary(
        cases=t.cases,
        scored=t.scored,
        passed=t.passed,
        failed=t.scored - t.passed,
        pass_rate=round(t.passed / t.scored, 6) if t.scored else None,
        none_of_clean=t.none_of_clean,
        cost_usd=round(t.cost_usd, 8),
        tokens=t.tokens,
        steps=t.steps,
        latency_ms_mean=(
            round(t.latency_ms_sum / t.latency_ms_count, 1) if t.latency_ms_count else None
        ),
        latency_ms_max=t.latency_ms_max,
        recovered=t.recovered,
        failures=dict(sorted(t.failures.items())),
        judge_cost_usd=round(t.judge_cost_usd, 8),
        judge_mean=round(t.judge_score_sum / t.judged, 6) if t.judged else None,
        judged=t.judged,
    )


def summarise(results: Sequence[CaseResult]) -> ExperimentSummary:
    return figures(totals(results))


def outcomes(results: Sequence[CaseResult]) -> dict[str, tuple[bool, ...]]:
    """Each scored case's assertion results, in order: what a recovery drill must give
    again."""
    return {
        r.case_id: tuple(a.passed for a in r.assertions) for r in results if r.state == "scored"
    }


def _changes(a: CaseResult, b: CaseResult) -> list[AssertionChange]:
    left = {x.index: x for x in a.assertions}
    right = {x.index: x for x in b.assertions}
    out = []
    for i in sorted(set(left) | set(right)):
        x, y = left.get(i), right.get(i)
        if x is None or y is None or x.passed != y.passed:
            kind = (x or y).kind  # type: ignore[union-attr]
            out.append(
                AssertionChange(
                    index=i,
                    kind=kind,
                    a=None if x is None else x.passed,
                    b=None if y is None else y.passed,
                )
            )
    return out


def _change(a: CaseResult | None, b: CaseResult | None) -> str:
    if a is None:
        return "only_b"
    if b is None:
        return "only_a"
    if not a.passed and b.passed:
        return "fixed"
    if a.passed and not b.passed:
        return "regressed"
    return "same"


def compare(a: Experiment, b: Experiment) -> Comparison:
    """``b`` against ``a``, case by case (by case id), in ``a``'s order then ``b``'s."""
    left = {r.case_id: r for r in a.results}
    right = {r.case_id: r for r in b.results}
    order = [r.case_id for r in a.results] + [c for c in right if c not in left]
    cases = []
    for case_id in order:
        x, y = left.get(case_id), right.get(case_id)
        cases.append(
            CaseComparison(
                case_id=case_id,
                a=None if x is None else x.passed,
                b=None if y is None else y.passed,
                change=_change(x, y),  # type: ignore[arg-type]
                assertions=_changes(x, y) if x is not None and y is not None else [],
                judge_a=x.judge.score if x is not None and x.judge is not None else None,
                judge_b=y.judge.score if y is not None and y.judge is not None else None,
            )
        )
    ra, rb = a.summary.pass_rate, b.summary.pass_rate
    return Comparison(
        a=a.model_copy(update={"results": []}),
        b=b.model_copy(update={"results": []}),
        pass_rate_delta=None if ra is None or rb is None else round(rb - ra, 6),
        cost_usd_delta=round(b.summary.cost_usd - a.summary.cost_usd, 8),
        fixed=sum(1 for c in cases if c.change == "fixed"),
        regressed=sum(1 for c in cases if c.change == "regressed"),
        cases=cases,
    )
