"""``turnkeep bindings add|list|revoke``: the chat bridges' participant bindings
(docs/bridges.md), which sender of a bridge is which subject of the tenant. An admin's
token."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Annotated, Literal

import typer
from rich.table import Table
from rich.text import Text

from turnkeep import render
from turnkeep.cli.output import JsonOpt, Out, TokenOpt, UrlOpt, out_for
from turnkeep.models import Binding

bindings_app = typer.Typer(help="Chat bridges' participant bindings (an admin's token).")


def bindings_table(bindings: Iterable[Binding], *, boxed: bool = True) -> Table:
    """One row per binding: its id, the sender, who they are, the agent, live or not."""
    t = render.table(
        "binding", "bridge", "workspace", "channel", "user", "subject", "role", "agent",
        "state", boxed=boxed,
    )  # fmt: skip
    for b in bindings:
        state = Text("live", style="green") if b.revoked_at is None else Text("revoked", "dim")
        t.add_row(
            b.binding_id, b.bridge, b.workspace, b.channel, b.user, b.subject, b.role, b.agent,
            state,
        )  # fmt: skip
    return t


def _out(out: Out, bindings: list[Binding]) -> None:
    if out.json:
        docs = [b.model_dump(mode="json") for b in bindings]
        out.document(docs[0] if len(docs) == 1 else docs)
    else:
        out.show(bindings_table(bindings, boxed=out.console.is_terminal))


@bindings_app.command("add")
def bindings_add(
    ctx: typer.Context,
    bridge: Annotated[Literal["slack", "generic"], typer.Argument(help="slack or generic")],
    workspace: Annotated[str, typer.Argument(help="Slack: the team id (T…)")],
    channel: Annotated[str, typer.Argument(help="Slack: the channel id (C…); * for every one")],
    user: Annotated[str, typer.Argument(help="Slack: the user id (U…)")],
    agent: Annotated[str, typer.Option(help="the agent that answers them")],
    subject: Annotated[str | None, typer.Option(help="who they are (default bridge.user)")] = None,
    role: Annotated[Literal["member", "admin"], typer.Option(help="their role")] = "member",
    reply_url: Annotated[str | None, typer.Option(help="the generic bridge's reply URL")] = None,
    url: UrlOpt = None,
    token: TokenOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Bind a sender: their messages become turns as SUBJECT, answered by AGENT."""
    out = out_for(ctx, url, token, as_json)
    body: dict[str, str] = {
        "bridge": bridge,
        "workspace": workspace,
        "channel": channel,
        "user": user,
        "agent": agent,
        "role": role,
    }
    if subject is not None:
        body["subject"] = subject
    if reply_url is not None:
        body["reply_url"] = reply_url
    with out.client() as tk:
        _out(out, [tk.bindings.create(**body)])


@bindings_app.command("list")
def bindings_list(
    ctx: typer.Context, url: UrlOpt = None, token: TokenOpt = None, as_json: JsonOpt = False
) -> None:
    """The tenant's bindings, live ones first."""
    out = out_for(ctx, url, token, as_json)
    with out.client() as tk:
        listed = tk.bindings.list().bindings
    if out.json:
        out.document([b.model_dump(mode="json") for b in listed])
    else:
        out.show(bindings_table(listed, boxed=out.console.is_terminal))


@bindings_app.command("revoke")
def bindings_revoke(
    ctx: typer.Context,
    binding: Annotated[str, typer.Argument(help="the binding's id (bnd_…)")],
    url: UrlOpt = None,
    token: TokenOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Revoke a binding: the sender's next message admits nothing."""
    out = out_for(ctx, url, token, as_json)
    with out.client() as tk:
        _out(out, [tk.bindings.revoke(binding)])
