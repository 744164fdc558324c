"""``search turns`` and ``search sessions``: the tenant's turns across its sessions, or
its sessions, by state, agent, version, project, metadata, error code and time
(docs/search.md, docs/cli.md), newest first, a page at a time or ``--all``.

A time (``--since``, ``--until``, ``--updated-since``, ``--updated-until``) is RFC
3339 (``2026-12-01T09:00:00+01:00``), a day (``2026-12-01``: its midnight, UTC) or a
span back from now (``30m``, ``12h``, ``7d``, ``2w``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any

import typer

from turnkeep import render
from turnkeep.cli.listings import AllOpt, LimitOpt, listing
from turnkeep.cli.output import JsonOpt, TokenOpt, UrlOpt, out_for
from turnkeep.models import Session, Turn

search_app = typer.Typer(
    help="Find turns and sessions by state, agent, version, project, metadata, error, time.",
    no_args_is_help=True,
)

_SPAN = re.compile(r"^(\d+)([mhdw])$")
_UNITS = {"m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


def parse_when(text: str, *, now: datetime | None = None) -> datetime:
    """A time as the options take it: RFC 3339, a day (its midnight UTC) or a span back
    from ``now``; BadParameter otherwise."""
    span = _SPAN.match(text.strip())
    if span:
        back = timedelta(**{_UNITS[span.group(2)]: int(span.group(1))})
        return (now or datetime.now(UTC)) - back
    try:
        found = datetime.fromisoformat(text.strip())
    except ValueError:
        hint = f"{text!r}: RFC 3339, a day (YYYY-MM-DD) or 30m/12h/7d/2w"
        raise typer.BadParameter(hint) from None
    return found if found.tzinfo is not None else found.replace(tzinfo=UTC)


def parse_meta(items: Iterable[str]) -> dict[str, str]:
    """``--meta key=value`` options as a mapping; BadParameter for one without ``=``."""
    pairs: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise typer.BadParameter(f"{item!r} is not key=value", param_hint="--meta")
        pairs[key] = value
    return pairs


def _when(text: str | None) -> datetime | None:
    return None if text is None else parse_when(text)


StateOpt = Annotated[
    list[str] | None,
    typer.Option("--state", metavar="STATE", help="a state; repeat for any of several"),
]
AgentOpt = Annotated[str | None, typer.Option(metavar="NAME", help="the agent")]
ProjectOpt = Annotated[str | None, typer.Option(metavar="ID", help="your project")]
MetaOpt = Annotated[
    list[str] | None,
    typer.Option("--meta", metavar="KEY=VALUE", help="a label; repeat: every pair must match"),
]
When = {"metavar": "WHEN"}
SinceOpt = Annotated[
    str | None, typer.Option("--since", **When, help="created at or after (7d, a day, RFC 3339)")
]
UntilOpt = Annotated[str | None, typer.Option("--until", **When, help="created before")]
UpdatedSinceOpt = Annotated[str | None, typer.Option(**When, help="updated at or after")]
UpdatedUntilOpt = Annotated[str | None, typer.Option(**When, help="updated before")]


def _times(
    since: str | None, until: str | None, updated_since: str | None, updated_until: str | None
) -> dict[str, datetime | None]:
    return {
        "created_since": _when(since),
        "created_until": _when(until),
        "updated_since": _when(updated_since),
        "updated_until": _when(updated_until),
    }


@search_app.command("turns")
def search_turns(
    ctx: typer.Context,
    state: StateOpt = None,
    agent: AgentOpt = None,
    version: Annotated[
        str | None, typer.Option("--version", metavar="VERSION", help="the agent's version")
    ] = None,
    error: Annotated[
        str | None, typer.Option(metavar="CODE", help="the error code of a failed turn")
    ] = None,
    project: ProjectOpt = None,
    meta: MetaOpt = None,
    since: SinceOpt = None,
    until: UntilOpt = None,
    updated_since: UpdatedSinceOpt = None,
    updated_until: UpdatedUntilOpt = None,
    limit: LimitOpt = 20,
    every: AllOpt = False,
    url: UrlOpt = None,
    token: TokenOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """The tenant's turns across its sessions that match every filter, newest first."""
    filters: dict[str, Any] = {
        "state": state or None,
        "agent": agent,
        "agent_version": version,
        "error": error,
        "project": project,
        "metadata": parse_meta(meta or ()),
        **_times(since, until, updated_since, updated_until),
    }
    out = out_for(ctx, url, token, as_json)
    listing(
        out,
        lambda tk, n, after: tk.search.turns(limit=n, after=after, **filters),
        "turns",
        turns_table,
        limit,
        every,
    )


@search_app.command("sessions")
def search_sessions(
    ctx: typer.Context,
    state: StateOpt = None,
    agent: AgentOpt = None,
    project: ProjectOpt = None,
    meta: MetaOpt = None,
    since: SinceOpt = None,
    until: UntilOpt = None,
    updated_since: UpdatedSinceOpt = None,
    updated_until: UpdatedUntilOpt = None,
    limit: LimitOpt = 20,
    every: AllOpt = False,
    url: UrlOpt = None,
    token: TokenOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """The tenant's sessions that match every filter (``--state idle`` or an active
    turn's state), newest first."""
    filters: dict[str, Any] = {
        "state": state or None,
        "agent": agent,
        "project": project,
        "metadata": parse_meta(meta or ()),
        **_times(since, until, updated_since, updated_until),
    }
    out = out_for(ctx, url, token, as_json)
    listing(
        out,
        lambda tk, n, after: tk.search.sessions(limit=n, after=after, **filters),
        "sessions",
        sessions_table,
        limit,
        every,
    )


def _labels(metadata: dict[str, str]) -> str:
    return render.short(" ".join(f"{k}={v}" for k, v in sorted(metadata.items())), 40)


def turns_table(turns: Iterable[Turn], *, boxed: bool = True) -> Any:
    t = render.table(
        "session", "turn", "state", "agent", "created", "metadata", "outcome", boxed=boxed
    )
    for turn in turns:
        outcome = render.error_text(turn.error) or render.result_text(turn.result)
        t.add_row(
            turn.session_id,
            turn.turn_id,
            render.state(turn.state),
            render.agent_name(turn),
            render.when(turn.created_at),
            _labels(turn.metadata),
            render.short(outcome, 50),
        )
    return t


def sessions_table(sessions: Iterable[Session], *, boxed: bool = True) -> Any:
    t = render.table("session", "agent", "state", "project", "created", "metadata", boxed=boxed)
    for s in sessions:
        t.add_row(
            s.session_id,
            s.agent,
            render.state(s.state),
            s.project or "",
            render.when(s.created_at),
            _labels(s.metadata),
        )
    return t
