"""``turnkeep limits``: read or declare the tenant's max_running (docs/flow-control.md);
declaring takes an admin's token."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.text import Text

from turnkeep.cli.output import JsonOpt, TokenOpt, UrlOpt, out_for


def limits(
    ctx: typer.Context,
    max_running: Annotated[
        int | None,
        typer.Option(min=1, help="declare the tenant's max_running (an admin's token)"),
    ] = None,
    clear: Annotated[
        bool, typer.Option("--clear", help="clear the tenant's own max_running")
    ] = False,
    url: UrlOpt = None,
    token: TokenOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """The tenant's max_running: at most that many of its turns run at once, the rest
    wait queued. With --max-running N (or --clear) declare it first."""
    if clear and max_running is not None:
        raise typer.BadParameter("give --max-running or --clear, not both")
    out = out_for(ctx, url, token, as_json)
    with out.client() as tk:
        if clear or max_running is not None:
            got = tk.max_running.set(None if clear else max_running)
        else:
            got = tk.max_running.get()
    if out.json:
        out.document(got.model_dump(mode="json"))
        return
    own = "none declared" if got.max_running is None else f"{got.max_running} (declared)"
    force = "no limit" if got.effective_max_running is None else str(got.effective_max_running)
    by = "" if got.updated_by is None else f", by {got.updated_by}"
    out.show(Text(f"max_running: {own}; in force: {force}{by}"))
