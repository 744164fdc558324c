"""The listings, newest first, a page at a time or ``--all``: ``sessions``, ``turns``,
and ``projects list|new|show|set`` (the caller's projects and their overrides)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Annotated, Any

import typer
from rich.text import Text

from turnkeep import render
from turnkeep.cli.output import JsonOpt, Out, TokenOpt, UrlOpt, json_object, out_for
from turnkeep.client import Client
from turnkeep.models import Project

LimitOpt = Annotated[int, typer.Option(min=1, help="show at most this many")]
AllOpt = Annotated[bool, typer.Option("--all", help="every one, page after page")]
#: the API's largest page of a listing (MAX_LIST_PAGE, api/http/sessions.py)
_PAGE = 500


def _pages(fetch: Any, limit: int, every: bool) -> list[Any]:
    """Items of ``fetch(limit=, after=) -> (items, next)`` pages, newest first."""
    found: list[Any] = []
    after = None
    while True:
        items, after = fetch(_PAGE if every else min(_PAGE, limit - len(found)), after)
        found.extend(items)
        if after is None or (not every and len(found) >= limit):
            return found


def listing(
    out: Out,
    page: Callable[[Client, int, str | None], Any],
    items: str,
    table: Callable[..., Any],
    limit: int,
    every: bool,
) -> None:
    """Print a listing: ``page(client, n, after)`` answers a page whose ``items``
    attribute holds them and ``next`` the cursor; ``table`` renders them."""
    with out.client() as tk:

        def fetch(n: int, after: str | None) -> tuple[list[Any], str | None]:
            answered = page(tk, n, after)
            return list(getattr(answered, items)), answered.next

        found = _pages(fetch, limit, every)
    if out.json:
        out.document([x.model_dump(mode="json") for x in found])
    else:
        out.show(table(found, boxed=out.console.is_terminal))


def sessions(
    ctx: typer.Context,
    limit: LimitOpt = 20,
    every: AllOpt = False,
    url: UrlOpt = None,
    token: TokenOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """The tenant's sessions, newest first."""
    out = out_for(ctx, url, token, as_json)
    listing(
        out,
        lambda tk, n, after: tk.sessions.list(limit=n, after=after),
        "sessions",
        render.sessions_table,
        limit,
        every,
    )


def turns(
    ctx: typer.Context,
    session: Annotated[str, typer.Argument(help="the session id")],
    limit: LimitOpt = 20,
    every: AllOpt = False,
    url: UrlOpt = None,
    token: TokenOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """A session's turns, newest first."""
    out = out_for(ctx, url, token, as_json)
    listing(
        out,
        lambda tk, n, after: tk.turns.list(session, limit=n, after=after),
        "turns",
        render.turns_table,
        limit,
        every,
    )


# -- projects ----------------------------------------------------------------------------

projects_app = typer.Typer(
    help="Your projects: sessions grouped under you, with per-agent overrides.",
    no_args_is_help=True,
)


def _overrides(raw: str | None) -> dict[str, Any] | None:
    return None if raw is None else json_object(raw, "--overrides")


OverridesOpt = Annotated[
    str | None,
    typer.Option(
        help='JSON: {"agents": {"<name>": {"instructions": …, "limits": {…}}}}',
    ),
]


@projects_app.command("list")
def projects_list(
    ctx: typer.Context,
    limit: LimitOpt = 20,
    every: AllOpt = False,
    url: UrlOpt = None,
    token: TokenOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Your projects, newest first."""
    out = out_for(ctx, url, token, as_json)
    listing(
        out,
        lambda tk, n, after: tk.projects.list(limit=n, after=after),
        "projects",
        render.projects_table,
        limit,
        every,
    )


@projects_app.command("new")
def projects_new(
    ctx: typer.Context,
    project: Annotated[str | None, typer.Argument(help="its id (default: a new one)")] = None,
    overrides: OverridesOpt = None,
    url: UrlOpt = None,
    token: TokenOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Create a project owned by you (the same id and overrides again: the same one)."""
    out = out_for(ctx, url, token, as_json)
    with out.client() as tk:
        made = tk.projects.create(project, overrides=_overrides(overrides))
    _project_out(out, made)


@projects_app.command("show")
def projects_show(
    ctx: typer.Context,
    project: Annotated[str, typer.Argument(help="the project's id")],
    url: UrlOpt = None,
    token: TokenOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """A project of yours and its overrides (404 for anyone else's)."""
    out = out_for(ctx, url, token, as_json)
    with out.client() as tk:
        _project_out(out, tk.projects.get(project))


@projects_app.command("set")
def projects_set(
    ctx: typer.Context,
    project: Annotated[str, typer.Argument(help="the project's id")],
    overrides: Annotated[str, typer.Option(help="JSON: the new overrides, replacing the old")],
    url: UrlOpt = None,
    token: TokenOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Replace a project's overrides (turns admitted before keep theirs)."""
    out = out_for(ctx, url, token, as_json)
    with out.client() as tk:
        _project_out(out, tk.projects.update(project, _overrides(overrides) or {}))


def _project_out(out: Out, project: Project) -> None:
    if out.json:
        out.document(project.model_dump(mode="json"))
    else:
        out.show(render.projects_table([project], boxed=out.console.is_terminal))
        if project.overrides:
            out.show(Text(json.dumps(project.overrides, indent=2)))


def inbox(
    ctx: typer.Context,
    limit: LimitOpt = 20,
    every: AllOpt = False,
    url: UrlOpt = None,
    token: TokenOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Every open request you may answer, across the tenant's sessions."""
    out = out_for(ctx, url, token, as_json)
    listing(
        out,
        lambda tk, n, after: tk.inbox.list(limit=n, after=after),
        "inputs",
        _inbox_table,
        limit,
        every,
    )


def _inbox_table(items: Any, *, boxed: bool = True) -> Any:
    t = render.table("session", "turn", "request", "kind", "tool", "expires", boxed=boxed)
    for i in items:
        r = i.request
        tool = (r.tool or {}).get("name") or "-"
        t.add_row(i.session_id, i.turn_id, r.request_id, r.kind, tool, render.when(r.expires_at))
    return t
