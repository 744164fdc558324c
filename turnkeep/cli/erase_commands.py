"""``turnkeep delete``: delete a session, everything it held erased, its tombstone kept
(docs/erasure.md, docs/cli.md)."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.text import Text

from turnkeep.cli.output import EXIT_TIMEOUT, JsonOpt, TokenOpt, UrlOpt, out_for
from turnkeep.erasure import Tombstone


def delete(
    ctx: typer.Context,
    session: Annotated[str, typer.Argument(help="the session to delete")],
    wait: Annotated[
        bool, typer.Option("--wait", help="wait until everything it held is erased")
    ] = False,
    timeout: Annotated[float, typer.Option(help="seconds --wait waits at most")] = 120.0,
    url: UrlOpt = None,
    token: TokenOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Delete a session: its active turns are cancelled, everything it held is erased,
    its tombstone stays (reads of it answer 410 from now on). Again: its tombstone."""
    out = out_for(ctx, url, token, as_json)
    with out.client() as tk:
        gone = tk.sessions.wait_erased(session, timeout) if wait else tk.sessions.delete(session)
    if out.json:
        out.document(gone.model_dump(mode="json"))
    else:
        out.show(Text(tombstone_text(gone)))
    if wait and gone.erased_at is None:
        raise typer.Exit(EXIT_TIMEOUT)


def tombstone_text(gone: Tombstone) -> str:
    """One line: who deleted it, when, and whether it is erased yet."""
    who = f"by {gone.deleted_by}" if gone.deleted_by else "(its TTL ran out)"
    state = (
        f"erased at {gone.erased_at.isoformat()}"
        if gone.erased_at is not None
        else f"erasing ({gone.erased_rows} rows so far)"
    )
    return f"{gone.session_id}  {gone.reason} {who} at {gone.deleted_at.isoformat()}; {state}"
