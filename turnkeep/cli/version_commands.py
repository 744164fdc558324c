"""The commands on agents' versions (docs/deploy.md, "Rolling deploys and agent
versions"): ``agents`` (what the API declares), ``versions NAME`` (each definition of
an agent: its active turns by state and the live workers serving it, what a drain
watches) and ``upgrade`` (move a turn, or every turn on one definition, to the newest
version at its next safe point); and their tables."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Annotated, get_args

import typer
from rich.table import Table
from rich.text import Text

from turnkeep import render
from turnkeep.cli.output import JsonOpt, TokenOpt, UrlOpt, fail, out_for
from turnkeep.client import Client
from turnkeep.models import AgentInfo, DefinitionUse, TurnState

AgentArg = Annotated[str, typer.Argument(help="the agent's name")]
#: the states in their lifecycle's order, for a definition's turns
_STATES: tuple[str, ...] = get_args(TurnState)
_FULL_HASH = 64


def _yes(value: bool) -> str:
    return "yes" if value else "no"


def _flag(value: bool) -> Text | str:
    return Text("yes", style="green") if value else "no"


def agents_table(agents: Iterable[AgentInfo], *, boxed: bool = True) -> Table:
    """One row per declared version: the agent, its version, its hash's first 12 hex,
    whether it is the latest, whether it is the default of the tenant's new turns (a
    gated agent's is the version the tenant promoted), and what its turns do on a
    deploy."""
    t = render.table("agent", "version", "hash", "latest", "default", "on_deploy", boxed=boxed)
    for agent in agents:
        for v in agent.versions:
            t.add_row(
                agent.name,
                v.version,
                v.definition_hash[: render.HASH],
                _flag(v.latest),
                _flag(v.default),
                v.on_deploy,
            )
    return t


def turns_by_state(turns: dict[str, int]) -> str:
    """``running 2, queued 1`` in the states' order (``none`` without any)."""
    order = sorted(turns, key=lambda s: (_STATES.index(s) if s in _STATES else len(_STATES), s))
    shown = [f"{s} {turns[s]}" for s in order if turns[s]]
    return ", ".join(shown) or "none"


def versions_table(versions: Iterable[DefinitionUse], *, boxed: bool = True) -> Table:
    """One row per definition hash: its version (``-``: not declared), declared,
    latest, default, its active turns by state and the live workers serving it."""
    t = render.table(
        "hash", "version", "declared", "latest", "default", "turns", "workers", boxed=boxed
    )
    for v in versions:
        workers = ", ".join(w.worker for w in v.workers)
        t.add_row(
            v.definition_hash[: render.HASH],
            v.version or "-",
            _yes(v.declared),
            _flag(v.latest),
            _flag(v.default),
            Text(turns_by_state(v.turns), style="yellow" if v.active else "dim"),
            f"{len(v.workers)}: {workers}" if v.workers else Text("none", style="red"),
        )
    return t


def agents(
    ctx: typer.Context,
    url: UrlOpt = None,
    token: TokenOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """The agents the API declares. Every version, its hash, latest, default, on_deploy."""
    out = out_for(ctx, url, token, as_json)
    with out.client() as tk:
        listed = tk.agents.list()
    if out.json:
        out.document(listed.model_dump(mode="json"))
    elif not listed.agents:
        out.show(Text("no agents declared"))
    else:
        out.show(agents_table(listed.agents, boxed=out.console.is_terminal))


def versions(
    ctx: typer.Context,
    name: AgentArg,
    url: UrlOpt = None,
    token: TokenOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """An agent's definitions: active turns by state, live workers. Drained: no turns."""
    out = out_for(ctx, url, token, as_json)
    with out.client() as tk:
        found = tk.agents.versions(name)
    if out.json:
        out.document(found.model_dump(mode="json"))
    else:
        out.show(versions_table(found.versions, boxed=out.console.is_terminal))


def full_hash(tk: Client, name: str, given: str) -> str:
    """The definition hash a prefix names among the agent's definitions (as
    ``versions`` shows them); a full hash as it is."""
    given = given.strip().lower()
    if len(given) == _FULL_HASH:
        return given
    matches = [
        v.definition_hash
        for v in tk.agents.versions(name).versions
        if v.definition_hash.lower().startswith(given)
    ]
    if len(matches) != 1:
        which = "no definition" if not matches else f"{len(matches)} definitions"
        fail(f"agent {name} has {which} whose hash starts with {given!r}")
    return matches[0]


def upgrade(
    ctx: typer.Context,
    session: Annotated[str | None, typer.Argument(help="the turn's session")] = None,
    turn: Annotated[str | None, typer.Argument(help="the turn id")] = None,
    agent: Annotated[
        str | None,
        typer.Option("--agent", metavar="NAME", help="every turn of this agent on --hash"),
    ] = None,
    hash_: Annotated[
        str | None,
        typer.Option(
            "--hash", metavar="HASH", help="the definition hash, or a prefix (as versions shows)"
        ),
    ] = None,
    url: UrlOpt = None,
    token: TokenOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Move turns to the newest version. One turn (SESSION TURN) or every turn on a
    definition (--agent NAME --hash HASH), at its next safe point, even if pinned.
    Admin role."""
    positional = (session is not None, turn is not None)
    options = (agent is not None, hash_ is not None)
    if {positional, options} != {(True, True), (False, False)}:
        raise typer.BadParameter("give SESSION TURN, or --agent NAME --hash HASH")
    out = out_for(ctx, url, token, as_json)
    with out.client() as tk:
        if session is not None and turn is not None:
            moved = tk.turns.upgrade(session, turn)
            if out.json:
                out.document(moved.model_dump(mode="json"))
                return
            out.show(
                Text(
                    f"turn {moved.turn_id}: upgrade requested; it moves to the newest"
                    " version of its agent at its next safe point"
                )
            )
            return
        assert agent is not None and hash_ is not None
        definition = full_hash(tk, agent, hash_)
        flagged = tk.agents.upgrade(agent, definition)
    if out.json:
        out.document(flagged.model_dump(mode="json"))
        return
    short = definition[: render.HASH]
    if not flagged.requested:
        out.show(Text(f"no active turn of {agent} on {short}: nothing to move"))
        return
    plural = "" if flagged.requested == 1 else "s"
    out.show(
        Text(
            f"{flagged.requested} turn{plural} of {agent} on {short} flagged: each moves"
            " to the newest version at its next safe point"
        )
    )
