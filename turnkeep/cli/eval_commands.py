"""``turnkeep eval …`` (datasets, experiments, comparisons) and ``turnkeep promote``:
the evaluation plane from a terminal (docs/evaluation.md, docs/cli.md)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Group
from rich.text import Text

from turnkeep import render
from turnkeep.cli import eval_tables as tables
from turnkeep.cli.output import EXIT_PROBLEM, JsonOpt, Out, TokenOpt, UrlOpt, fail, out_for
from turnkeep.client import ApiError
from turnkeep.evaluation import Experiment, PromotionCheck

eval_app = typer.Typer(
    help="Evaluation: datasets of cases, experiments through the runtime, comparisons.",
    no_args_is_help=True,
)

NameArg = Annotated[str, typer.Argument(help="the dataset's name")]
ExperimentArg = Annotated[str, typer.Argument(help="the experiment's id")]
Derive = Annotated[
    list[str] | None,
    typer.Option(help="assertions derived from each turn: trajectory, output (repeatable)"),
]


def _read_cases(source: str) -> list[dict[str, Any]]:
    """Cases from a file (``-``: stdin): a JSON list, ``{"cases": [...]}``, or JSON Lines."""
    text = sys.stdin.read() if source == "-" else Path(source).read_text()
    try:
        value = json.loads(text)
    except ValueError:
        value = None
    if isinstance(value, dict) and isinstance(value.get("cases"), list):
        return list(value["cases"])
    if isinstance(value, list):
        return value
    cases = []
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            cases.append(json.loads(line))
        except ValueError:
            raise typer.BadParameter(f"line {n} is not JSON", param_hint="FILE") from None
    return cases


def _experiment(out: Out, e: Experiment) -> None:
    if out.json:
        out.document(e.model_dump(mode="json"))
        return
    boxed = out.console.is_terminal
    out.show(
        Group(
            tables.summary_line(e),
            tables.figures(e.summary, boxed=boxed),
            tables.cases(e, boxed=boxed),
        )
    )


@eval_app.command("dataset")
def dataset_create(
    ctx: typer.Context,
    name: NameArg,
    source: Annotated[str, typer.Argument(metavar="FILE", help="JSON or JSON Lines; - for stdin")],
    url: UrlOpt = None,
    token: TokenOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """A new version of the dataset from a file of cases (the same cases: their version)."""
    out = out_for(ctx, url, token, as_json)
    with out.client() as tk:
        made = tk.eval.datasets.create(name, _read_cases(source))
    if out.json:
        out.document(made.model_dump(mode="json"))
    else:
        out.show(Text(f"{made.dataset} v{made.version}: {made.case_count} cases"))


@eval_app.command("add-turns")
def add_turns(
    ctx: typer.Context,
    name: NameArg,
    turns: Annotated[list[str], typer.Argument(metavar="SESSION/TURN...", help="real turns")],
    derive: Derive = None,
    base: Annotated[
        int | None, typer.Option(help="the version whose cases come first (0: none)")
    ] = None,
    url: UrlOpt = None,
    token: TokenOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """A new version: the newest one's cases, and one case per turn (its input, and the
    assertions derived from what it did)."""
    out = out_for(ctx, url, token, as_json)
    kinds = list(derive or [])
    if any(k not in ("trajectory", "output") for k in kinds):
        raise typer.BadParameter("trajectory or output", param_hint="--derive")
    refs = []
    for ref in turns:
        session, _, turn = ref.partition("/")
        if not session or not turn:
            raise typer.BadParameter(f"{ref!r} is not SESSION/TURN", param_hint="SESSION/TURN")
        refs.append({"session_id": session, "turn_id": turn, "derive": kinds})
    with out.client() as tk:
        made = tk.eval.datasets.add_turns(name, refs, base=base)
    if out.json:
        out.document(made.model_dump(mode="json"))
    else:
        out.show(Text(f"{made.dataset} v{made.version}: {made.case_count} cases"))


@eval_app.command("datasets")
def datasets(
    ctx: typer.Context,
    name: Annotated[str | None, typer.Argument(help="one dataset: its versions")] = None,
    url: UrlOpt = None,
    token: TokenOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """The tenant's datasets, or one dataset's versions."""
    out = out_for(ctx, url, token, as_json)
    boxed = out.console.is_terminal
    with out.client() as tk:
        if name is None:
            found = tk.eval.datasets.list()
            t = render.table("dataset", "latest", "versions", "updated", boxed=boxed)
            for d in found.datasets:
                t.add_row(d.name, str(d.latest_version), str(d.versions), render.when(d.updated_at))
        else:
            versions = tk.eval.datasets.get(name)
            t = render.table("version", "cases", "by", "created", boxed=boxed)
            for v in versions.versions:
                t.add_row(
                    str(v.version), str(v.case_count), v.created_by, render.when(v.created_at)
                )
    if out.json:
        out.document((found if name is None else versions).model_dump(mode="json"))
    else:
        out.show(t)


@eval_app.command("cases")
def cases(
    ctx: typer.Context,
    name: NameArg,
    version: Annotated[int, typer.Option(min=1, help="the version")] = 1,
    url: UrlOpt = None,
    token: TokenOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """A dataset version's cases: each input and its assertions."""
    out = out_for(ctx, url, token, as_json)
    with out.client() as tk:
        found = tk.eval.datasets.version(name, version)
    if out.json:
        out.document(found.model_dump(mode="json"))
        return
    t = render.table("case", "input", "assertions", boxed=out.console.is_terminal)
    for c in found.cases:
        text = c.input.messages[-1].content if c.input.messages else ""
        shown = text if len(text) <= 60 else text[:59] + "…"
        t.add_row(c.case_id, shown, ", ".join(a.kind for a in c.assertions) or "-")
    out.show(t)


def _approvals(approve: list[str] | None, approve_all: bool) -> dict[str, Any] | None:
    if not approve and not approve_all:
        return None
    return {
        "default": "approve" if approve_all else "deny",
        "tools": dict.fromkeys(approve or [], "approve"),
    }


@eval_app.command("run")
def run(
    ctx: typer.Context,
    dataset: NameArg,
    agent: Annotated[str, typer.Argument(help="the agent")],
    agent_version: Annotated[
        str | None, typer.Option(help="the version (default: what new turns get)")
    ] = None,
    dataset_version: Annotated[
        int | None, typer.Option(min=1, help="the dataset's version (default: the newest)")
    ] = None,
    approve: Annotated[
        list[str] | None, typer.Option(help="approve this tool's calls (repeatable)")
    ] = None,
    approve_all: Annotated[bool, typer.Option(help="approve every call (default: deny)")] = False,
    judge: Annotated[str | None, typer.Option(help="a judge agent, AGENT or AGENT@VERSION")] = None,
    rubric: Annotated[str | None, typer.Option(help="what the judge looks for")] = None,
    concurrency: Annotated[int | None, typer.Option(min=1, max=32, help="cases at once")] = None,
    recovery: Annotated[bool, typer.Option(help="a recovery drill (docs/evaluation.md)")] = False,
    experiment_id: Annotated[str | None, typer.Option("--id", help="its id")] = None,
    wait: Annotated[bool, typer.Option(help="wait until it completed")] = True,
    timeout: Annotated[float, typer.Option(help="seconds to wait")] = 600.0,
    url: UrlOpt = None,
    token: TokenOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Run a dataset against an agent version: each case a real turn through the runtime."""
    out = out_for(ctx, url, token, as_json)
    judged = None
    if judge is not None:
        name, _, version = judge.partition("@")
        judged = {"agent": name, "version": version or None, "rubric": rubric}
    with out.client() as tk:
        e = tk.eval.experiments.run(
            dataset,
            agent,
            agent_version=agent_version,
            dataset_version=dataset_version,
            approvals=_approvals(approve, approve_all),
            judge=judged,
            concurrency=concurrency,
            recovery=recovery,
            experiment_id=experiment_id,
        )
        if wait:
            with out.status(f"experiment {e.experiment_id}: {e.summary.cases} cases"):
                e = tk.eval.experiments.wait(e, timeout=timeout)
    _experiment(out, e)


@eval_app.command("show")
def show(
    ctx: typer.Context,
    experiment_id: ExperimentArg,
    url: UrlOpt = None,
    token: TokenOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """An experiment: its figures and each case's result."""
    out = out_for(ctx, url, token, as_json)
    with out.client() as tk:
        _experiment(out, tk.eval.experiments.get(experiment_id))


@eval_app.command("list")
def listing(
    ctx: typer.Context,
    dataset: Annotated[str | None, typer.Option(help="of this dataset")] = None,
    agent: Annotated[str | None, typer.Option(help="of this agent")] = None,
    limit: Annotated[int, typer.Option(min=1, max=200)] = 20,
    url: UrlOpt = None,
    token: TokenOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """The tenant's experiments, newest first."""
    out = out_for(ctx, url, token, as_json)
    with out.client() as tk:
        found = tk.eval.experiments.list(dataset=dataset, agent=agent, limit=limit)
    if out.json:
        out.document(found.model_dump(mode="json"))
    else:
        out.show(tables.listing(found.experiments, boxed=out.console.is_terminal))


@eval_app.command("compare")
def compare(
    ctx: typer.Context,
    a: Annotated[str, typer.Argument(help="the baseline experiment")],
    b: Annotated[str, typer.Argument(help="the experiment compared with it")],
    url: UrlOpt = None,
    token: TokenOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Two experiments side by side, case by case: fixed, regressed, the same."""
    out = out_for(ctx, url, token, as_json)
    with out.client() as tk:
        found = tk.eval.experiments.compare(a, b)
    if out.json:
        out.document(found.model_dump(mode="json"))
    else:
        out.show(
            Group(
                tables.comparison_line(found),
                tables.comparison(found, boxed=out.console.is_terminal),
            )
        )


@eval_app.command("cancel")
def cancel(
    ctx: typer.Context,
    experiment_id: ExperimentArg,
    url: UrlOpt = None,
    token: TokenOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Stop a running experiment: no more cases, its running turns cancelled."""
    out = out_for(ctx, url, token, as_json)
    with out.client() as tk:
        _experiment(out, tk.eval.experiments.cancel(experiment_id))


@eval_app.command("promotions")
def promotions(
    ctx: typer.Context,
    agent: Annotated[str, typer.Argument(help="the agent")],
    url: UrlOpt = None,
    token: TokenOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """An agent's default version, its promotion policy and its promotions."""
    out = out_for(ctx, url, token, as_json)
    with out.client() as tk:
        found = tk.eval.promotions(agent)
    if out.json:
        out.document(found.model_dump(mode="json"))
        return
    gated = "gated by a promotion policy" if found.gated else "not gated: its latest version"
    head = Text(f"{found.agent}: new turns get v{found.default_version} ({gated})")
    out.show(Group(head, tables.promotions(found, boxed=out.console.is_terminal)))


def promote(
    ctx: typer.Context,
    agent: Annotated[str, typer.Argument(help="the agent")],
    version: Annotated[str, typer.Argument(help="the version to make the default")],
    url: UrlOpt = None,
    token: TokenOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Make a version the default of the agent's new turns, if its policy's checks pass
    (an admin's). A refusal lists each failed check and exits 1."""
    out = out_for(ctx, url, token, as_json)
    try:
        with out.client() as tk:
            done = tk.eval.promote(agent, version)
    except ApiError as exc:
        if exc.code != "promotion_refused":
            raise
        failed = [PromotionCheck.model_validate(c) for c in exc.problem.get("failed") or []]
        if out.json:
            out.document(exc.problem)
        else:
            out.show(tables.checks(failed, boxed=out.console.is_terminal))
        fail(f"{agent} v{version} not promoted: {len(failed)} check(s) failed", EXIT_PROBLEM)
    if out.json:
        out.document(done.model_dump(mode="json"))
        return
    head = Text(
        f"{agent} v{done.version} is the default for new turns (was v{done.default_before})"
    )
    out.show(Group(head, tables.checks(done.checks, boxed=out.console.is_terminal)))
