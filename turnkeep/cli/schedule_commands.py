"""``schedules list|new|show|pause|resume|delete``: the tenant's schedules, turns
admitted on a cron expression, an interval or once (docs/flow-control.md)."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Annotated

import typer
from rich.table import Table
from rich.text import Text

from turnkeep import render
from turnkeep.cli.listings import AllOpt, LimitOpt, listing
from turnkeep.cli.output import JsonOpt, Out, TokenOpt, UrlOpt, out_for
from turnkeep.schedules import Schedule

schedules_app = typer.Typer(
    help="Schedules: an agent's turn on every tick of a cron expression or an interval.",
    no_args_is_help=True,
)

IdArg = Annotated[str, typer.Argument(help="the schedule's id")]


def table(found: Iterable[Schedule], *, boxed: bool = True) -> Table:
    t = render.table("schedule", "agent", "when", "next", "fired", "state", boxed=boxed)
    for s in found:
        when = (
            f"{s.cron} {s.timezone}"
            if s.cron
            else f"every {s.every_seconds:g}s"
            if s.every_seconds is not None
            else f"once at {render.when(s.at)}"
        )
        state = "paused" if s.paused else "active"
        t.add_row(s.schedule_id, s.agent, when, render.when(s.next_at), str(s.fired), state)
    return t


def _out(out: Out, found: Schedule) -> None:
    if out.json:
        out.document(found.model_dump(mode="json"))
    else:
        out.show(table([found], boxed=out.console.is_terminal))


@schedules_app.command("list")
def schedules_list(
    ctx: typer.Context,
    limit: LimitOpt = 20,
    every: AllOpt = False,
    url: UrlOpt = None,
    token: TokenOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """The tenant's schedules, by id."""
    out = out_for(ctx, url, token, as_json)
    listing(
        out,
        lambda tk, n, after: tk.schedules.list(limit=n, after=after),
        "schedules",
        table,
        limit,
        every,
    )


@schedules_app.command("new")
def schedules_new(
    ctx: typer.Context,
    agent: Annotated[str, typer.Argument(help="the agent each tick's turn runs")],
    text: Annotated[str, typer.Argument(help="the turn's input, the same on every tick")],
    cron: Annotated[str | None, typer.Option(help="a cron expression, e.g. '0 7 * * *'")] = None,
    every: Annotated[float | None, typer.Option(help="or every this many seconds")] = None,
    at: Annotated[
        datetime | None, typer.Option(help="or once, at this time (UTC unless it says)")
    ] = None,
    tz: Annotated[str, typer.Option("--timezone", help="the cron's time zone")] = "UTC",
    session: Annotated[
        str | None, typer.Option(help="every tick in this session (default: a new one each)")
    ] = None,
    skip_missed: Annotated[
        bool, typer.Option("--skip-missed", help="a tick missed while down is not run")
    ] = False,
    schedule_id: Annotated[str | None, typer.Option("--id", help="its id")] = None,
    url: UrlOpt = None,
    token: TokenOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Create a schedule (the same id and spec again: the same one)."""
    if sum(x is not None for x in (cron, every, at)) != 1:
        raise typer.BadParameter("give exactly one of --cron, --every and --at")
    if at is not None and at.tzinfo is None:
        at = at.replace(tzinfo=UTC)
    out = out_for(ctx, url, token, as_json)
    with out.client() as tk:
        made = tk.schedules.create(
            agent,
            text,
            cron=cron,
            every_seconds=every,
            timezone=tz,
            schedule_id=schedule_id,
            session_id=session,
            missed="skip" if skip_missed else "run_once",
            at=at,
        )
    _out(out, made)


@schedules_app.command("show")
def schedules_show(
    ctx: typer.Context,
    schedule: IdArg,
    url: UrlOpt = None,
    token: TokenOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """One schedule."""
    out = out_for(ctx, url, token, as_json)
    with out.client() as tk:
        _out(out, tk.schedules.get(schedule))


@schedules_app.command("pause")
def schedules_pause(
    ctx: typer.Context,
    schedule: IdArg,
    url: UrlOpt = None,
    token: TokenOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Stop its ticks (turns admitted already run on)."""
    out = out_for(ctx, url, token, as_json)
    with out.client() as tk:
        _out(out, tk.schedules.pause(schedule))


@schedules_app.command("resume")
def schedules_resume(
    ctx: typer.Context,
    schedule: IdArg,
    url: UrlOpt = None,
    token: TokenOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Start its ticks again, from the next one after now."""
    out = out_for(ctx, url, token, as_json)
    with out.client() as tk:
        _out(out, tk.schedules.resume(schedule))


@schedules_app.command("delete")
def schedules_delete(
    ctx: typer.Context,
    schedule: IdArg,
    url: UrlOpt = None,
    token: TokenOpt = None,
) -> None:
    """Delete it: no tick fires again."""
    out = out_for(ctx, url, token, False)
    with out.client() as tk:
        tk.schedules.delete(schedule)
    out.show(Text(f"schedule {schedule} deleted"))
