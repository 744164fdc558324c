"""What every client command shares: where it connects (``--url``, ``--token``), how it
prints (rich on a terminal, plain text anywhere else, ``--json`` for machines), and how
it fails (the exit statuses of docs/cli.md)."""

from __future__ import annotations

import contextlib
import json
import sys
from dataclasses import dataclass
from typing import Annotated, Any, NoReturn

import typer
from rich.console import Console
from rich.text import Text

from turnkeep import render
from turnkeep.cli.server_extra import EXIT_USAGE
from turnkeep.client import Client
from turnkeep.models import Turn

__all__ = [
    "EXIT_PROBLEM",
    "EXIT_TIMEOUT",
    "EXIT_TURN_FAILED",
    "EXIT_UNREACHABLE",
    "EXIT_USAGE",
    "JsonOpt",
    "Out",
    "TokenOpt",
    "UrlOpt",
    "fail",
    "json_object",
    "out_for",
]

#: the exit statuses (docs/cli.md); EXIT_USAGE, 2, is server_extra's
EXIT_PROBLEM = 1
EXIT_UNREACHABLE = 3
EXIT_TURN_FAILED = 4
EXIT_TIMEOUT = 5


def fail(message: str, code: int = EXIT_PROBLEM) -> NoReturn:
    """A client command cannot do what was asked: ``error: …`` on stderr, exit ``code``."""
    sys.stderr.write(f"error: {message}\n")
    raise typer.Exit(code)


UrlOpt = Annotated[
    str | None,
    typer.Option(
        "--url",
        help="the API (env TURNKEEP_URL; default http://127.0.0.1:8000)",
        show_default=False,
    ),
]
TokenOpt = Annotated[
    str | None,
    typer.Option("--token", help="a bearer token (env TURNKEEP_TOKEN)", show_default=False),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="machine output (JSON)")]


@dataclass
class Out:
    """Where a client command connects, and how it prints."""

    url: str | None = None
    token: str | None = None
    json: bool = False

    def __post_init__(self) -> None:
        self.console: Console = render.console()

    @property
    def rich(self) -> bool:
        """A person reads this: colours, boxes and spinners."""
        return self.console.is_terminal and not self.json

    def client(self, **kwargs: Any) -> Client:
        return Client(self.url, self.token, **kwargs)

    def document(self, value: Any) -> None:
        """One JSON document."""
        sys.stdout.write(json.dumps(value, ensure_ascii=False, indent=2) + "\n")

    def line(self, value: Any) -> None:
        """One JSON line (a tail's event), flushed."""
        sys.stdout.write(json.dumps(value, ensure_ascii=False, separators=(",", ":")) + "\n")
        sys.stdout.flush()

    def show(self, renderable: Any) -> None:
        """Print for a person: as rich makes it on a terminal; else plain lines without
        trailing blanks, a line of text never wrapped, flushed (a tail into a pipe)."""
        if self.console.is_terminal:
            self.console.print(renderable)
            return
        with self.console.capture() as captured:
            self.console.print(renderable, soft_wrap=isinstance(renderable, Text))
        lines = captured.get().splitlines()
        sys.stdout.write("".join(line.rstrip() + "\n" for line in lines))
        sys.stdout.flush()

    def turn(self, turn: Turn) -> None:
        if self.json:
            self.document(turn.model_dump(mode="json"))
        else:
            self.show(render.turn_text(turn))

    def status(self, text: str) -> contextlib.AbstractContextManager[Any]:
        if self.rich:
            return self.console.status(text)
        return contextlib.nullcontext()


def out_for(ctx: typer.Context, url: str | None, token: str | None, as_json: bool) -> Out:
    """A command's options over the global ones (``turnkeep --url … --json <command>``)."""
    root = ctx.find_root().obj
    base = root if isinstance(root, Out) else Out()
    return Out(url or base.url, token or base.token, as_json or base.json)


def json_object(raw: str, option: str) -> dict[str, Any]:
    """The JSON object an option was given; a usage error for anything else."""
    try:
        value = json.loads(raw)
    except ValueError as exc:
        raise typer.BadParameter(f"not JSON: {exc}", param_hint=option) from None
    if not isinstance(value, dict):
        raise typer.BadParameter("must be a JSON object", param_hint=option)
    return value
