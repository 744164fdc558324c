"""Answering a turn's open input request: ``answer`` (any request, a JSON object), and
``approve`` / ``deny`` (an approval: one command written once, ``_decide``)."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Annotated, Any

import typer

from turnkeep.cli.output import JsonOpt, TokenOpt, UrlOpt, fail, json_object, out_for
from turnkeep.cli.turn_commands import SessionArg, TurnArg
from turnkeep.client import Client

ReasonOpt = Annotated[str, typer.Option(help="why (recorded with the answer)")]
RequestArg = Annotated[
    str | None, typer.Argument(help="the request id (default: the turn's open one)")
]


def answer_body(body: str | None, fields: Sequence[str]) -> dict[str, Any]:
    """An answer from ``--json '{…}'`` and ``--field`` items over it: ``k=v`` sets a
    string, ``k:=v`` a JSON value (as httpie does)."""
    if body is None and not fields:
        raise typer.BadParameter("give --json '{…}' or --field k=v")
    result: dict[str, Any] = {}
    if body is not None:
        result.update(json_object(body, "--json"))
    for item in fields:
        name, sep, value = item.partition("=")
        if not sep or not name.rstrip(":"):
            raise typer.BadParameter(f"{item!r} is not k=v or k:=v", param_hint="--field")
        if name.endswith(":"):
            try:
                result[name[:-1]] = json.loads(value)
            except ValueError as exc:
                raise typer.BadParameter(f"{item!r}: {exc}", param_hint="--field") from None
        else:
            result[name] = value
    return result


def answer(
    ctx: typer.Context,
    session: SessionArg,
    turn: TurnArg,
    request_id: Annotated[str, typer.Argument(help="the open request's id")],
    body: Annotated[
        str | None, typer.Option("--json", "--data", "-d", help="the answer, a JSON object")
    ] = None,
    field: Annotated[
        list[str] | None, typer.Option("--field", "-F", help="k=v (a string) or k:=v (JSON)")
    ] = None,
    url: UrlOpt = None,
    token: TokenOpt = None,
) -> None:
    """Answer a turn's open input request. A question, a reconciliation, …; machine
    output: turnkeep --json answer …"""
    out = out_for(ctx, url, token, False)
    answered = answer_body(body, field or [])
    with out.client() as tk:
        out.turn(tk.turns.answer(session, turn, request_id, answered))


def _request_id(tk: Client, session: str, turn: str, given: str | None) -> str:
    if given:
        return given
    pending = tk.turns.get(session, turn).pending_input
    if pending is None:
        fail(f"turn {turn} has no open input request")
    return pending.request_id


def _every(
    tk: Client, session: str, turn: str, approved: bool, reason: str
) -> dict[str, dict[str, Any]]:
    """The same decision for every open approval of the turn's wait."""
    body: dict[str, Any] = {"approved": approved, **({"reason": reason} if reason else {})}
    found = [p for p in tk.turns.get(session, turn).pending_inputs if p.kind == "approval"]
    if not found:
        fail(f"turn {turn} has no open approval request")
    return {p.request_id: body for p in found}


def _decide(approved: bool) -> Callable[..., None]:
    """The ``approve`` (``approved``) or ``deny`` command."""

    def decide(
        ctx: typer.Context,
        session: SessionArg,
        turn: TurnArg,
        request_id: RequestArg = None,
        reason: ReasonOpt = "",
        every: Annotated[
            bool,
            typer.Option("--all", help="every open approval of the turn's wait, in one answer"),
        ] = False,
        url: UrlOpt = None,
        token: TokenOpt = None,
        as_json: JsonOpt = False,
    ) -> None:
        out = out_for(ctx, url, token, as_json)
        with out.client() as tk:
            if every:
                if request_id:
                    raise typer.BadParameter("give a REQUEST_ID or --all, not both")
                out.turn(
                    tk.turns.answer_many(session, turn, _every(tk, session, turn, approved, reason))
                )
                return
            rid = _request_id(tk, session, turn, request_id)
            send = tk.turns.approve if approved else tk.turns.deny
            out.turn(send(session, turn, rid, reason))

    what = "Approve" if approved else "Deny"
    decide.__doc__ = f"{what} a turn's open approval request (--all: every one of its wait)."
    return decide


approve = _decide(True)
deny = _decide(False)
