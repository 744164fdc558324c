"""``turnkeep tokens new|list|stream``: make a bearer token and its ``TURNKEEP_TOKENS``
entry, list the configured ones (both checked by the API's own rules, runtime/tokens.py),
and get a short-lived stream token from the API."""

from __future__ import annotations

import json
import secrets
from typing import Annotated

import typer

from turnkeep import render
from turnkeep.cli.output import EXIT_USAGE, JsonOpt, TokenOpt, UrlOpt, fail, out_for
from turnkeep.cli.server_extra import needs_server
from turnkeep.runtime.tokens import TenantRole, TokenTable, token_digest

tokens_app = typer.Typer(
    help="Bearer tokens. Make one, list the configured ones, get a stream token.",
    no_args_is_help=True,
)

#: the prefix of the tokens ``tokens new`` makes (what a secret scanner can look for)
TOKEN_PREFIX = "tk_"


def new_token(tenant: str, subject: str, role: str) -> tuple[str, dict[str, str]]:
    """A fresh random bearer token, and its ``TURNKEEP_TOKENS`` entry (only its
    SHA-256). ``ValueError`` for a tenant, subject or role the API would refuse."""
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    entry = {"sha256": token_digest(token), "tenant": tenant, "subject": subject, "role": role}
    TokenTable.parse(json.dumps([entry]))  # the API's own checks, patterns included
    return token, entry


def token_entries(raw: str) -> list[dict[str, str]]:
    """The entries of a ``TURNKEEP_TOKENS`` value, checked as the API checks them
    (``ValueError``), each with its role (``member`` when absent)."""
    TokenTable.parse(raw)
    items = json.loads(raw) if raw.strip() else []
    return [
        {
            "tenant": str(item["tenant"]),
            "subject": str(item["subject"]),
            "role": str(item.get("role", TenantRole.MEMBER.value)),
            "sha256": str(item["sha256"]).lower(),
        }
        for item in items
    ]


@tokens_app.command("new")
def tokens_new(
    ctx: typer.Context,
    tenant: Annotated[str, typer.Option(help="the tenant it stands for")],
    subject: Annotated[str, typer.Option(help="who it is (recorded as `by`)")],
    role: Annotated[TenantRole, typer.Option(help="its role in the tenant")] = TenantRole.MEMBER,
    append: Annotated[
        bool, typer.Option("--append", help="keep the entries TURNKEEP_TOKENS holds now")
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """A new bearer token (shown once) and its TURNKEEP_TOKENS entry (its sha256 only)."""
    # the server's configuration, an operator's command: with the server installed, as
    # before the table moved out of api/auth.py (tests/unit/test_server_extra.py)
    needs_server("turnkeep tokens new")
    out = out_for(ctx, None, None, as_json)
    raw = _configured() if append else ""
    try:
        token, entry = new_token(tenant, subject, role.value)
        token_entries(raw)
    except ValueError as exc:
        fail(str(exc), EXIT_USAGE)
    table = json.dumps([*(json.loads(raw) if raw.strip() else []), entry])
    if out.json:
        out.document({"token": token, "entry": entry, "TURNKEEP_TOKENS": table})
        return
    print(f"token            {token}")
    print("                 (shown once: only its sha256 is configured; keep it now)")
    print(f"entry            {json.dumps(entry)}")
    print(f"TURNKEEP_TOKENS='{table}'")


def _configured() -> str:
    """``TURNKEEP_TOKENS``, read by the server's settings (installed: needs_server)."""
    from turnkeep.runtime.settings import AuthSettings

    return AuthSettings().tokens


@tokens_app.command("list")
def tokens_list(ctx: typer.Context, as_json: JsonOpt = False) -> None:
    """The tokens TURNKEEP_TOKENS configures: tenant, subject, role, digest prefix."""
    needs_server("turnkeep tokens list")  # as ``tokens new``
    out = out_for(ctx, None, None, as_json)
    try:
        entries = token_entries(_configured())
    except ValueError as exc:
        fail(str(exc), EXIT_USAGE)
    shown = [{**e, "sha256": e["sha256"][:12]} for e in entries]
    if out.json:
        out.document(shown)
    elif not entries:
        print("no tokens configured (TURNKEEP_TOKENS is empty or unset)")
    else:
        out.show(render.tokens_table(entries, boxed=out.console.is_terminal))


@tokens_app.command("stream")
def tokens_stream(
    ctx: typer.Context,
    session: Annotated[str, typer.Argument(help="the session id")],
    url: UrlOpt = None,
    token: TokenOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """A short-lived stream token to follow one session's events from a browser."""
    out = out_for(ctx, url, token, as_json)
    with out.client() as tk:
        issued = tk.sessions.stream_token(session).model_dump(mode="json")
        base = tk.config.url
    if out.json:
        out.document(issued)
        return
    print(f"stream token  {issued['token']}")
    print(f"expires       {issued['expires_at']}")
    print(f"  curl -N '{base}/v1/sessions/{session}/events?stream_token={issued['token']}'")
