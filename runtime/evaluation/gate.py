"""Promotion gates (docs/evaluation.md, "Promotion"): the policy an agents module
declares for an agent, what ``promote`` checks against it, and which version is the
default for a tenant's new turns.

An agents module declares ``PROMOTIONS = [PromotionPolicy(agent="support", …)]`` beside
``AGENTS``; which version such a gated agent's new turns get is
runtime/agents/promotion.py's ``default_version``.

The checks, per dataset the policy names, each on the dataset's newest version:
``experiment`` (the candidate has a completed experiment on it), ``min_pass_rate``,
``no_regression`` (its pass rate trails the current default's by at most
``max_regression``; the default needs an experiment too, unless it is the candidate),
``none_of_clean`` (every none-of assertion of every case passed) and, when asked,
``recovery`` (a completed recovery drill of the candidate, in which at least one turn
was taken over from a worker that died mid-turn, gave every case's assertions the same
results). Judges' scores are not read: they supplement, never decide.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from turnkeep.evaluation import Experiment, PromotionCheck
from turnkeep.runtime.agents.promotion import PromotionPolicy
from turnkeep.runtime.evaluation.summary import outcomes

__all__ = ["Evidence", "PromotionPolicy", "checks"]


@dataclass(frozen=True)
class Evidence:
    """What the gate reads for one dataset of the policy: its newest version (None: no
    such dataset), and the newest completed experiments on it of the candidate, of the
    current default, and the candidate's newest completed recovery drill (each with
    its results)."""

    dataset: str
    dataset_version: int | None
    candidate: Experiment | None = None
    default: Experiment | None = None
    drill: Experiment | None = None


def _check(
    name: str, dataset: str, passed: bool, detail: str, *exps: Experiment | None
) -> PromotionCheck:
    ids = [e.experiment_id for e in exps if e is not None]
    return PromotionCheck(
        check=name, dataset=dataset, passed=passed, detail=detail, experiments=ids
    )


def _rate(e: Experiment) -> float:
    return e.summary.pass_rate or 0.0


def _dataset_checks(
    policy: PromotionPolicy, candidate: str, default: str, ev: Evidence
) -> list[PromotionCheck]:
    d = ev.dataset
    if ev.dataset_version is None:
        return [_check("experiment", d, False, f"no dataset named {d!r}")]
    c = ev.candidate
    if c is None:
        missing = f"version {candidate!r} has no completed experiment on {d} v{ev.dataset_version}"
        return [_check("experiment", d, False, missing)]
    out = [_check("experiment", d, True, f"experiment {c.experiment_id}", c)]
    rate = _rate(c)
    out.append(
        _check("min_pass_rate", d, rate >= policy.min_pass_rate,
               f"pass rate {rate:.3f}, at least {policy.min_pass_rate:.3f} wanted", c)
    )  # fmt: skip
    if candidate == default:
        out.append(_check("no_regression", d, True, "the candidate is the default", c))
    elif ev.default is None:
        out.append(
            _check("no_regression", d, False,
                   f"the default version {default!r} has no completed experiment on "
                   f"{d} v{ev.dataset_version} to compare with", c)
        )  # fmt: skip
    else:
        base = _rate(ev.default)
        out.append(
            _check("no_regression", d, rate >= base - policy.max_regression - 1e-9,
                   f"pass rate {rate:.3f} against the default's {base:.3f} "
                   f"(margin {policy.max_regression:.3f})", c, ev.default)
        )  # fmt: skip
    if policy.none_of_clean:
        failed = sum(
            1 for r in c.results for a in r.assertions if a.category == "none_of" and not a.passed
        )
        out.append(
            _check("none_of_clean", d, failed == 0 and c.summary.scored == c.summary.cases,
                   f"{failed} none-of assertion(s) failed", c)
        )  # fmt: skip
    if policy.recovery:
        out.append(_recovery(d, c, ev.drill))
    return out


def _recovery(dataset: str, c: Experiment, drill: Experiment | None) -> PromotionCheck:
    if drill is None:
        return _check("recovery", dataset, False, "no completed recovery drill of the candidate", c)
    if drill.summary.recovered < 1:
        return _check(
            "recovery", dataset, False,
            f"drill {drill.experiment_id} took no turn over from a dead worker", c, drill,
        )  # fmt: skip
    want, got = outcomes(c.results), outcomes(drill.results)
    differ = sorted(k for k in set(want) | set(got) if want.get(k) != got.get(k))
    detail = (
        f"{drill.summary.recovered} turn(s) recovered, the same assertion results"
        if not differ
        else f"cases with other results after recovery: {', '.join(differ[:20])}"
    )
    return _check("recovery", dataset, not differ, detail, c, drill)


def checks(
    policy: PromotionPolicy, candidate: str, default: str, evidence: Sequence[Evidence]
) -> list[PromotionCheck]:
    """Every check of ``policy`` for promoting ``candidate`` over ``default``."""
    return [check for ev in evidence for check in _dataset_checks(policy, candidate, default, ev)]
