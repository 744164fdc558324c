"""The ``turnkeep`` command: the typer app, its global options, every command group
registered in the order ``turnkeep --help`` lists them, and ``main`` (the console
script) with the exit statuses of docs/cli.md."""

from __future__ import annotations

import sys
from collections.abc import Sequence

import typer

from turnkeep.cli import (
    answers,
    bridge_commands,
    erase_commands,
    eval_commands,
    feedback_commands,
    limit_commands,
    listings,
    processes,
    schedule_commands,
    search_commands,
    token_commands,
    turn_commands,
    version_commands,
)
from turnkeep.cli.output import EXIT_PROBLEM, EXIT_UNREACHABLE, JsonOpt, Out, TokenOpt, UrlOpt
from turnkeep.client import ApiError, Unreachable

app = typer.Typer(
    name="turnkeep",
    help="Durable agent turns: run the service's processes, and drive its API.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    # plain click help when piped: no boxes or escapes in a file
    rich_markup_mode="rich" if sys.stdout.isatty() else None,
    context_settings={"help_option_names": ["-h", "--help"]},
)

processes.register(app)


@app.callback()
def _root(
    ctx: typer.Context, url: UrlOpt = None, token: TokenOpt = None, as_json: JsonOpt = False
) -> None:
    ctx.obj = Out(url, token, as_json)


for _command in (
    turn_commands.submit,
    turn_commands.tail,
    turn_commands.show,
    answers.answer,
):
    app.command(rich_help_panel="Turns")(_command)
app.command("approve", rich_help_panel="Turns")(answers.approve)
app.command("deny", rich_help_panel="Turns")(answers.deny)
app.command(rich_help_panel="Turns")(turn_commands.cancel)
app.command(rich_help_panel="Turns")(turn_commands.fork)
app.command(rich_help_panel="Turns")(turn_commands.rerun)
app.command(rich_help_panel="Turns")(erase_commands.delete)
app.command(rich_help_panel="Turns")(feedback_commands.feedback)
app.command(rich_help_panel="Versions")(feedback_commands.scores)
app.command(rich_help_panel="Listings")(limit_commands.limits)
app.command(rich_help_panel="Listings")(listings.sessions)
app.command(rich_help_panel="Listings")(listings.turns)
app.command(rich_help_panel="Listings")(listings.inbox)
app.add_typer(search_commands.search_app, name="search", rich_help_panel="Listings")
app.add_typer(listings.projects_app, name="projects", rich_help_panel="Listings")
app.add_typer(token_commands.tokens_app, name="tokens", rich_help_panel="Listings")
app.add_typer(schedule_commands.schedules_app, name="schedules", rich_help_panel="Listings")
app.add_typer(bridge_commands.bindings_app, name="bindings", rich_help_panel="Listings")
app.command(rich_help_panel="Versions")(version_commands.agents)
app.command(rich_help_panel="Versions")(version_commands.versions)
app.command(rich_help_panel="Versions")(version_commands.upgrade)
app.command(rich_help_panel="Versions")(eval_commands.promote)
app.add_typer(eval_commands.eval_app, name="eval", rich_help_panel="Versions")


def main(argv: Sequence[str] | None = None) -> int:
    """The console script: ``turnkeep <command> …``; the exit status (docs/cli.md)."""
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        app(args=args, prog_name="turnkeep")
    except Unreachable as exc:
        sys.stderr.write(f"error: {exc}\n")
        return EXIT_UNREACHABLE
    except ApiError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return EXIT_PROBLEM
    return 0
