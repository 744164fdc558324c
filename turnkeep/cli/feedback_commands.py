"""``feedback`` (score a turn or one of its steps) and ``scores`` (an agent's feedback per
version): docs/evaluation.md."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.text import Text

from turnkeep import render
from turnkeep.cli.output import JsonOpt, TokenOpt, UrlOpt, out_for
from turnkeep.cli.turn_commands import SessionArg, TurnArg


def feedback(
    ctx: typer.Context,
    session: SessionArg,
    turn: TurnArg,
    up: Annotated[bool, typer.Option("--up", help="a thumb up")] = False,
    down: Annotated[bool, typer.Option("--down", help="a thumb down")] = False,
    score: Annotated[float | None, typer.Option(help="a score on --scale")] = None,
    scale: Annotated[
        tuple[float, float], typer.Option(help="the score's scale: LOWEST HIGHEST")
    ] = (1.0, 5.0),
    step: Annotated[
        int | None, typer.Option(min=1, help="score this step (default: the turn)")
    ] = None,
    note: Annotated[str | None, typer.Option(help="why (kept as its hash only)")] = None,
    url: UrlOpt = None,
    token: TokenOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Score a turn, or one of its steps: a thumb or a number. Again: replaces yours."""
    if sum((up, down, score is not None)) != 1:
        raise typer.BadParameter("give exactly one of --up, --down and --score")
    out = out_for(ctx, url, token, as_json)
    with out.client() as tk:
        given = tk.feedback.give(
            session,
            turn,
            thumbs="up" if up else "down" if down else None,
            score=score,
            scale=scale if score is not None else None,
            step=step,
            note=note,
        )
    if out.json:
        out.document(given.model_dump(mode="json"))
        return
    what = f"step {given.step}" if given.step else f"turn {given.turn_id}"
    value = ("up" if given.score else "down") if given.kind == "thumbs" else f"{given.score:g}"
    out.show(Text(f"{what}: {value} by {given.subject} (trace {given.trace_id})"))


def scores(
    ctx: typer.Context,
    agent: Annotated[str, typer.Argument(help="the agent")],
    url: UrlOpt = None,
    token: TokenOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """An agent's feedback per version: how many, thumbs, the mean score (0 to 1)."""
    out = out_for(ctx, url, token, as_json)
    with out.client() as tk:
        summary = tk.feedback.summary(agent)
    if out.json:
        out.document(summary.model_dump(mode="json"))
        return
    t = render.table("version", "feedback", "up", "down", "mean", boxed=out.console.is_terminal)
    for v in summary.versions:
        t.add_row(
            v.version or "-", str(v.count), str(v.thumbs_up), str(v.thumbs_down),
            f"{v.mean_score:.2f}",
        )  # fmt: skip
    out.show(t)
