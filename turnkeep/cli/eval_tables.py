"""The evaluation commands' tables (turnkeep/cli/eval_commands.py): an experiment's
cases, its figures, two experiments side by side, a promotion's checks."""

from __future__ import annotations

from collections.abc import Iterable

from rich.table import Table
from rich.text import Text

from turnkeep import render
from turnkeep.evaluation import (
    AgentPromotions,
    Comparison,
    Experiment,
    ExperimentSummary,
    PromotionCheck,
)


def _mark(passed: bool | None) -> Text:
    if passed is None:
        return Text("-", style="dim")
    return Text("pass", style="green") if passed else Text("FAIL", style="red")


def _rate(rate: float | None) -> str:
    return "-" if rate is None else f"{rate:.0%}"


def summary_line(e: Experiment) -> Text:
    s = e.summary
    line = (
        f"{e.experiment_id}  {e.agent} v{e.agent_version} on {e.dataset} v{e.dataset_version}: "
        f"{e.state}, {s.scored}/{s.cases} scored, {s.passed} passed ({_rate(s.pass_rate)})"
    )
    return Text(line)


def figures(s: ExperimentSummary, *, boxed: bool = True) -> Table:
    t = render.table("figure", "value", boxed=boxed)
    rows = [
        ("pass rate", _rate(s.pass_rate)),
        ("passed / failed", f"{s.passed} / {s.failed}"),
        ("none-of clean", "-" if s.none_of_clean is None else ("yes" if s.none_of_clean else "NO")),
        ("cost", f"${s.cost_usd:.6f}"),
        ("tokens", str(s.tokens)),
        ("steps", str(s.steps)),
        ("latency mean", "-" if s.latency_ms_mean is None else f"{s.latency_ms_mean:.0f} ms"),
        ("recovered turns", str(s.recovered)),
        ("failures", ", ".join(f"{k} {v}" for k, v in s.failures.items()) or "none"),
    ]
    if s.judged or s.judge_cost_usd:
        mean = "-" if s.judge_mean is None else f"{s.judge_mean:.2f}"
        rows += [("judge mean", mean), ("judge cost", f"${s.judge_cost_usd:.6f}")]
    for name, value in rows:
        t.add_row(name, value)
    return t


def cases(e: Experiment, *, boxed: bool = True) -> Table:
    """One row per case: its result, its turn's end, what failed, the judge beside."""
    t = render.table("case", "result", "turn", "steps", "ms", "failed", "judge", boxed=boxed)
    for r in e.results:
        failed = ", ".join(f"{a.kind}: {a.detail}" for a in r.assertions if not a.passed)
        turn = str(r.turn_state or r.state)
        if r.error_code:
            turn = f"{turn} ({r.error_code})"
        judge = "-"
        if r.judge is not None:
            judge = r.judge.verdict or r.judge.state
            if r.judge.score is not None:
                judge += f" {r.judge.score:.2f}"
        ms = "-" if r.latency_ms is None else str(r.latency_ms)
        t.add_row(r.case_id, _mark(r.passed), turn, str(r.steps), ms, failed or "-", judge)
    return t


def listing(found: Iterable[Experiment], *, boxed: bool = True) -> Table:
    t = render.table("experiment", "agent", "dataset", "state", "pass rate", "cost", boxed=boxed)
    for e in found:
        t.add_row(
            e.experiment_id,
            f"{e.agent} v{e.agent_version}",
            f"{e.dataset} v{e.dataset_version}",
            e.state,
            _rate(e.summary.pass_rate),
            f"${e.summary.cost_usd:.6f}",
        )
    return t


def comparison(c: Comparison, *, boxed: bool = True) -> Table:
    """One row per case: a's result, b's, the change, the assertions that moved."""
    a, b = c.a, c.b
    t = render.table(
        "case", f"a: v{a.agent_version}", f"b: v{b.agent_version}", "change", "assertions",
        boxed=boxed,
    )  # fmt: skip
    styles = {"fixed": "green", "regressed": "red"}
    for case in c.cases:
        moved = ", ".join(
            f"#{x.index} {x.kind} {_word(x.a)}->{_word(x.b)}" for x in case.assertions
        )
        t.add_row(
            case.case_id,
            _mark(case.a),
            _mark(case.b),
            Text(case.change, style=styles.get(case.change, "")),
            moved or "-",
        )
    return t


def _word(passed: bool | None) -> str:
    return "-" if passed is None else ("pass" if passed else "fail")


def comparison_line(c: Comparison) -> Text:
    delta = "-" if c.pass_rate_delta is None else f"{c.pass_rate_delta:+.0%}"
    return Text(
        f"pass rate {_rate(c.a.summary.pass_rate)} -> {_rate(c.b.summary.pass_rate)} ({delta}), "
        f"{c.fixed} fixed, {c.regressed} regressed, cost {c.cost_usd_delta:+.6f} USD"
    )


def checks(found: Iterable[PromotionCheck], *, boxed: bool = True) -> Table:
    t = render.table("check", "dataset", "result", "detail", boxed=boxed)
    for c in found:
        t.add_row(c.check, c.dataset or "-", _mark(c.passed), c.detail)
    return t


def promotions(p: AgentPromotions, *, boxed: bool = True) -> Table:
    t = render.table("seq", "version", "outcome", "by", "at", "default before", boxed=boxed)
    for e in p.promotions:
        outcome = Text("promoted", style="green") if e.accepted else Text("refused", style="red")
        t.add_row(str(e.seq), e.version, outcome, e.by, render.when(e.at), e.default_before or "-")
    return t
