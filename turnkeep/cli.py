"""``turnkeep``: the processes of a deployment, and a client of its API, in one command.

Processes: each becomes the ordinary command of the ecosystem (so an operator can run
either under any supervisor), with the remaining arguments passed through as given:

    turnkeep api [uvicorn args]       uvicorn api.app:app
    turnkeep worker [celery args]     celery -A worker.app worker
    turnkeep beat [celery args]       celery -A worker.app beat
    turnkeep flower [flower args]     celery -A worker.app flower, behind basic auth
                                      (TURNKEEP_FLOWER_BASIC_AUTH), on 127.0.0.1
    turnkeep migrate                  alembic upgrade head on TURNKEEP_MIGRATE_URL
    turnkeep acp --agent NAME         ACP over stdio for editors (turnkeep/acp.py)
    turnkeep dev [--once]             all of them on this machine, and a demo turn
                                      (``make run``; turnkeep/dev.py)

Client commands (docs/cli.md), on the API at ``--url``/TURNKEEP_URL with
``--token``/TURNKEEP_TOKEN: ``submit``, ``tail``, ``show``, ``answer``, ``approve``,
``deny``, ``cancel``, ``sessions``, ``turns``, and ``tokens new|list|stream``. Output
is rich on a terminal and plain text anywhere else; ``--json`` is for machines (one
JSON document, JSON lines for a tail). Exit status: 0 done; 1 the API answered a
problem (``error: <status> <code>: <detail>`` on stderr); 2 a usage error or a refused
configuration; 3 the API was unreachable; 4 the turn waited for or followed ended
failed or cancelled; 5 ``--wait`` timed out before the turn settled or parked.

Flower can revoke tasks and shut workers down, so ``turnkeep flower`` never serves it
unauthenticated by accident:

    TURNKEEP_FLOWER_BASIC_AUTH=user:password[,user2:password2]
        Flower's ``--basic-auth``, handed over in its environment (FLOWER_BASIC_AUTH),
        so the password is not on a command line anyone on the host can list.
        Unset, it refuses to start (exit 2), unless Flower's own ``--basic-auth`` or
        ``--auth`` (OAuth) is given, or TURNKEEP_FLOWER_UNSAFE_NOAUTH=1 says that
        no authentication is meant (a trusted network only).
    TURNKEEP_FLOWER_ADDRESS=127.0.0.1
        the interface it binds (Flower's own default is every interface); an
        ``--address`` argument still wins.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import mimetypes
import os
import secrets
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer
from rich.console import Console
from rich.text import Text

from runtime.inputs import Role
from runtime.multitask import Multitask
from turnkeep import render
from turnkeep.client import Client, Delta, TurnkeepError, Unreachable
from turnkeep.models import Project, Turn

COMMANDS: dict[str, list[str]] = {
    "api": [sys.executable, "-m", "uvicorn", "api.app:app"],
    "worker": [sys.executable, "-m", "celery", "-A", "worker.app", "worker"],
    "beat": [sys.executable, "-m", "celery", "-A", "worker.app", "beat"],
    "flower": [sys.executable, "-m", "celery", "-A", "worker.app", "flower"],
    "migrate": [sys.executable, "-m", "store.migrate"],
    "acp": [sys.executable, "-m", "turnkeep.acp"],
}

#: the exit statuses (docs/cli.md)
EXIT_PROBLEM = 1
EXIT_USAGE = 2
EXIT_UNREACHABLE = 3
EXIT_TURN_FAILED = 4
EXIT_TIMEOUT = 5

#: a turn in these states waits for a person: ``--wait`` returns there
PARKED_STATES = frozenset({"waiting", "needs_reconciliation"})


def refuse(message: str) -> NoReturn:
    """A subcommand's configuration is unsafe or malformed: say why, exit 2."""
    sys.stderr.write(f"turnkeep: {message}\n")
    raise SystemExit(EXIT_USAGE)


#: what the service's processes import: the server extra's. ``pip install turnkeep`` is the
#: client alone (the client commands, the ACP agent), without them
SERVER_MODULES = ("celery", "fastapi", "uvicorn", "psycopg", "sqlalchemy", "alembic", "flower")
SERVER_EXTRA = "pip install 'turnkeep[server]'"


def needs_server(command: str) -> None:
    """A command that runs part of the service, in a client-only install: say what to
    install (exit 2) instead of failing on an import of the child or of this process."""
    missing = [m for m in SERVER_MODULES if importlib.util.find_spec(m) is None]
    if missing:
        refuse(
            f"{command} needs the server extra ({', '.join(missing)} not installed): "
            + SERVER_EXTRA
        )


def fail(message: str, code: int = EXIT_PROBLEM) -> NoReturn:
    """A client command cannot do what was asked: ``error: …`` on stderr, exit ``code``."""
    sys.stderr.write(f"error: {message}\n")
    raise typer.Exit(code)


# -- processes --------------------------------------------------------------------------

_TRUE = ("1", "true", "yes", "on")
#: Flower's own authentication options: given, Flower is not open
_FLOWER_AUTH_ARGS = ("--basic-auth", "--basic_auth", "--auth")
_FLOWER_AUTH_ENV = ("FLOWER_BASIC_AUTH", "FLOWER_AUTH")


def _basic_auth(value: str) -> str:
    """``user:password`` pairs, comma-separated, each part non-empty."""
    pairs = [p.strip() for p in value.split(",")]
    for pair in pairs:
        user, sep, password = pair.partition(":")
        if not (user and sep and password):
            refuse("TURNKEEP_FLOWER_BASIC_AUTH must be user:password[,user:password]")
    return ",".join(pairs)


def flower_env(args: Sequence[str], environ: Mapping[str, str]) -> tuple[list[str], dict[str, str]]:
    """The Flower arguments and environment of ``turnkeep flower``: basic auth from
    TURNKEEP_FLOWER_BASIC_AUTH, bound to TURNKEEP_FLOWER_ADDRESS (127.0.0.1). Refused (exit
    2) with neither that nor another authentication, unless TURNKEEP_FLOWER_UNSAFE_NOAUTH."""
    env = dict(environ)
    auth = environ.get("TURNKEEP_FLOWER_BASIC_AUTH", "").strip()
    own = any(a.split("=", 1)[0] in _FLOWER_AUTH_ARGS for a in args) or any(
        environ.get(k) for k in _FLOWER_AUTH_ENV
    )
    unsafe = environ.get("TURNKEEP_FLOWER_UNSAFE_NOAUTH", "").strip().lower() in _TRUE
    if auth:
        env["FLOWER_BASIC_AUTH"] = _basic_auth(auth)
    elif not (own or unsafe):
        refuse(
            "flower refuses to start without authentication: set "
            "TURNKEEP_FLOWER_BASIC_AUTH=user:password (or TURNKEEP_FLOWER_UNSAFE_NOAUTH=1 "
            "to run it open, on a trusted network only)"
        )
    address = environ.get("TURNKEEP_FLOWER_ADDRESS", "").strip() or "127.0.0.1"
    # first, so that an --address of the caller's (a later option) still wins
    return [f"--address={address}", *args], env


def process(
    name: str, args: Sequence[str], environ: Mapping[str, str]
) -> tuple[list[str], dict[str, str]]:
    """The command line and environment ``turnkeep <name> <args>`` becomes."""
    if name == "flower":
        extra, env = flower_env(args, environ)
        return [*COMMANDS[name], *extra], env
    return [*COMMANDS[name], *args], dict(environ)


def _exec(name: str, args: Sequence[str]) -> NoReturn:
    argv, env = process(name, args, os.environ)
    sys.stdout.flush()
    # the process becomes the service: signals reach it directly
    os.execve(argv[0], argv, env)


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

_PASS_THROUGH = {"allow_extra_args": True, "ignore_unknown_options": True}
_PROCESSES = {
    "api": "The API: uvicorn api.app:app.",
    "worker": "A worker: celery -A worker.app worker.",
    "beat": "The scheduler: celery -A worker.app beat.",
    "flower": "Flower, behind basic auth, on 127.0.0.1. TURNKEEP_FLOWER_BASIC_AUTH=user:pw.",
    "migrate": "Migrate the database. alembic upgrade head as TURNKEEP_MIGRATE_URL.",
    "acp": "An ACP agent over stdio. On TURNKEEP_URL with TURNKEEP_TOKEN.",
}


def _process_command(name: str, summary: str) -> None:
    def run(ctx: typer.Context) -> None:
        if name != "acp":  # a client of the API, in the client install
            needs_server(f"turnkeep {name}")
        _exec(name, ctx.args)

    run.__doc__ = summary + " Arguments pass through."
    app.command(
        name,
        context_settings=_PASS_THROUGH,
        add_help_option=False,
        rich_help_panel="Processes",
    )(run)


for _name, _summary in _PROCESSES.items():
    _process_command(_name, _summary)


@app.command(rich_help_panel="Processes")
def dev(
    once: Annotated[bool, typer.Option("--once", help="stop after the demo turn")] = False,
    migrate_only: Annotated[bool, typer.Option("--migrate-only", help="only migrate")] = False,
    port: Annotated[int, typer.Option(envvar="TURNKEEP_PORT", help="the API's port")] = 8000,
    flower_port: Annotated[int, typer.Option(help="Flower's port")] = 5555,
) -> None:
    """Run it all here, with a demo turn (make run). Migrates, then starts the API,
    two workers, beat and Flower (logs in ./.run/) and submits a demo turn."""
    needs_server("turnkeep dev")
    from turnkeep.dev import run

    raise typer.Exit(run(once=once, migrate_only=migrate_only, port=port, flower_port=flower_port))


# -- what every client command takes ------------------------------------------------------

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


def _out(ctx: typer.Context, url: str | None, token: str | None, as_json: bool) -> Out:
    """A command's options over the global ones (``turnkeep --url … --json <command>``)."""
    root = ctx.find_root().obj
    base = root if isinstance(root, Out) else Out()
    return Out(url or base.url, token or base.token, as_json or base.json)


@app.callback()
def _root(
    ctx: typer.Context, url: UrlOpt = None, token: TokenOpt = None, as_json: JsonOpt = False
) -> None:
    ctx.obj = Out(url, token, as_json)


# -- turns -------------------------------------------------------------------------------


def _messages(text: str | None, input_file: Path | None) -> str | list[dict[str, str]]:
    if (text is None) == (input_file is None):
        raise typer.BadParameter("give either TEXT or --input-file")
    if text is not None:
        return text
    assert input_file is not None
    try:
        raw = sys.stdin.read() if str(input_file) == "-" else input_file.read_text()
        messages = json.loads(raw)
    except (OSError, ValueError) as exc:
        raise typer.BadParameter(str(exc), param_hint="--input-file") from None
    if not (
        isinstance(messages, list)
        and messages
        and all(isinstance(m, dict) and {"role", "content"} <= set(m) for m in messages)
    ):
        raise typer.BadParameter(
            'a JSON list of {"role": …, "content": …} messages', param_hint="--input-file"
        )
    return [{"role": str(m["role"]), "content": str(m["content"])} for m in messages]


@contextlib.contextmanager
def interruptible() -> Iterator[None]:
    """Ctrl-C while waiting or following: exit 130 quietly (the turn goes on)."""
    try:
        yield
    except KeyboardInterrupt:
        raise typer.Exit(130) from None


def parked(turn: Turn) -> bool:
    """The turn waits for someone (an answered request: it resumes, it waits no more)."""
    pending = turn.pending_input
    return turn.state in PARKED_STATES and not (pending is not None and pending.resolved)


def wait_turn(tk: Client, turn: Turn, timeout: float, out: Out) -> Turn:
    """The turn once it settled or parked (waits for someone), or as it is after
    ``timeout`` seconds (the long poll answers a parked turn at once); the status line
    follows the state between polls."""
    deadline = time.monotonic() + timeout
    with interruptible(), out.status(f"turn {turn.turn_id}: {turn.state}") as status:
        while not (turn.terminal or parked(turn)):
            left = deadline - time.monotonic()
            if left <= 0:
                break
            turn = tk.wait(turn.session_id, turn.turn_id, min(left, 5.0))
            if status is not None:
                status.update(f"turn {turn.turn_id}: {turn.state}")
    return turn


def _start(tk: Client, session_id: str, turn_id: str | None) -> int:
    """Where a tail starts: at the turn's admission (``turn_id``, else the session's
    active turn, else its newest one), or the session's head when it has no turn."""
    if turn_id is not None:
        return tk.get(session_id, turn_id).accepted_seq - 1
    session = tk.session(session_id)
    if session.active_turn is not None:
        return tk.get(session_id, session.active_turn).accepted_seq - 1
    newest = tk.turns(session_id, limit=1).turns
    return newest[0].accepted_seq - 1 if newest else session.head_seq


@dataclass
class _DeltaLine:
    """The model's text as it is written, on one line per step, closed by the committed
    event that follows: speculative (a reconnect loses it; ``model.completed`` holds
    what counts)."""

    out: Out
    open: bool = False

    def add(self, delta: Delta) -> None:
        if self.out.json:
            self.out.line({"type": "model.delta", **delta.model_dump(mode="json")})
            return
        if not delta.text:
            return
        if not self.open:
            sys.stdout.write(f"  {'…':>7}  {'model.delta':<18} ")
        sys.stdout.write(delta.text.replace("\n", " "))
        sys.stdout.flush()
        self.open = True

    def close(self) -> None:
        if self.open:
            sys.stdout.write("\n")
            self.open = False


def follow(
    out: Out,
    tk: Client,
    session_id: str,
    after: int,
    *,
    turn_id: str | None = None,
    until_settled: bool = False,
) -> str | None:
    """Print the session's events after ``after`` as they commit, until ``turn_id``'s
    terminal event (only its events are shown), or with ``until_settled`` until a
    terminal event leaves the session idle; without either, until Ctrl-C. The type of
    the terminal event it ended at, if any."""
    if until_settled and turn_id is None:
        session = tk.session(session_id)
        if session.state == "idle" and after >= session.head_seq:
            return None
    deltas = _DeltaLine(out)
    with interruptible():
        for event in tk.stream(session_id, after=after, deltas=True):
            if turn_id is not None and event.turn_id != turn_id:
                continue
            if isinstance(event, Delta):
                deltas.add(event)
                continue
            deltas.close()
            if out.json:
                out.line(event.model_dump(mode="json"))
            else:
                out.show(render.event_text(event))
            if not event.terminal:
                continue
            if turn_id is not None or (until_settled and tk.session(session_id).state == "idle"):
                return event.type
    return None


def _settled_status(kind: str | None) -> int:
    return EXIT_TURN_FAILED if kind in ("turn.failed", "turn.cancelled") else 0


@app.command(rich_help_panel="Turns")
def submit(
    ctx: typer.Context,
    session: Annotated[str, typer.Argument(help="the session id")],
    agent: Annotated[str, typer.Argument(help="the agent's name")],
    text: Annotated[str | None, typer.Argument(help="the user message")] = None,
    input_file: Annotated[
        Path | None,
        typer.Option(
            "--input-file", "-f", help='JSON list of {"role", "content"} messages ("-": stdin)'
        ),
    ] = None,
    idempotency_key: Annotated[
        str | None, typer.Option(help="the turn's id (default: a new one)")
    ] = None,
    multitask: Annotated[
        Multitask | None, typer.Option(help="when the session is busy (default: enqueue)")
    ] = None,
    wait: Annotated[bool, typer.Option("--wait", help="wait until it settles or parks")] = False,
    follow_: Annotated[
        bool, typer.Option("--follow", help="tail its events until it settles")
    ] = False,
    timeout: Annotated[float, typer.Option(help="seconds --wait waits at most")] = 300.0,
    project: Annotated[
        str | None,
        typer.Option(help="your project the session belongs to (its first turn sets it)"),
    ] = None,
    attach: Annotated[
        list[Path] | None,
        typer.Option(
            "--attach",
            "-a",
            metavar="FILE",
            help="a file to upload to the (existing) session and name in the turn; repeatable",
        ),
    ] = None,
    url: UrlOpt = None,
    token: TokenOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Submit a turn. --wait for its result, or --follow its events."""
    out = _out(ctx, url, token, as_json)
    messages = _messages(text, input_file)
    files = [_attachment_file(path) for path in attach or []]
    with out.client() as tk:
        attachments = [
            tk.upload(
                session, data, filename=name, content_type=kind, idempotency_key=key
            ).attachment_id
            for name, kind, data, key in files
        ]
        turn = tk.admit(
            session,
            agent,
            messages,
            idempotency_key=idempotency_key,
            multitask=None if multitask is None else multitask.value,
            project=project,
            attachments=attachments,
        )
        if follow_:
            if not out.json:
                out.show(render.turn_text(turn))
            ended = follow(out, tk, session, turn.accepted_seq - 1, turn_id=turn.turn_id)
            raise typer.Exit(_settled_status(ended))
        if wait:
            turn = wait_turn(tk, turn, timeout, out)
        out.turn(turn)
        if wait and not (turn.terminal or parked(turn)):
            raise typer.Exit(EXIT_TIMEOUT)
        if turn.state in ("failed", "cancelled"):
            raise typer.Exit(EXIT_TURN_FAILED)


@app.command(rich_help_panel="Turns")
def tail(
    ctx: typer.Context,
    session: Annotated[str, typer.Argument(help="the session id")],
    after: Annotated[
        int | None,
        typer.Option(
            help="start after this seq (default: where the current or newest turn starts)"
        ),
    ] = None,
    turn: Annotated[
        str | None, typer.Option("--turn", help="only this turn's events, until it ends")
    ] = None,
    until_settled: Annotated[
        bool, typer.Option("--until-settled", help="stop once the session is idle")
    ] = False,
    url: UrlOpt = None,
    token: TokenOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Follow a session's events live. Resumes by itself after a dropped connection."""
    out = _out(ctx, url, token, as_json)
    with out.client() as tk:
        start = after if after is not None else _start(tk, session, turn)
        ended = follow(out, tk, session, start, turn_id=turn, until_settled=until_settled)
    raise typer.Exit(_settled_status(ended) if turn is not None else 0)


@app.command(rich_help_panel="Turns")
def show(
    ctx: typer.Context,
    session: Annotated[str, typer.Argument(help="the session id")],
    turn: Annotated[str, typer.Argument(help="the turn id")],
    url: UrlOpt = None,
    token: TokenOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """A turn's timeline. Its steps, attempts and waits, as tables."""
    out = _out(ctx, url, token, as_json)
    with out.client() as tk:
        timeline = tk.timeline(session, turn)
    if out.json:
        out.document(timeline.model_dump(mode="json"))
    else:
        out.show(render.timeline(timeline, boxed=out.console.is_terminal))


def json_object(raw: str, option: str) -> dict[str, Any]:
    """The JSON object an option was given; a usage error for anything else."""
    try:
        value = json.loads(raw)
    except ValueError as exc:
        raise typer.BadParameter(f"not JSON: {exc}", param_hint=option) from None
    if not isinstance(value, dict):
        raise typer.BadParameter("must be a JSON object", param_hint=option)
    return value


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


@app.command(rich_help_panel="Turns")
def answer(
    ctx: typer.Context,
    session: Annotated[str, typer.Argument(help="the session id")],
    turn: Annotated[str, typer.Argument(help="the turn id")],
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
    out = _out(ctx, url, token, False)
    answer = answer_body(body, field or [])
    with out.client() as tk:
        out.turn(tk.answer(session, turn, request_id, answer))


def _request_id(tk: Client, session: str, turn: str, given: str | None) -> str:
    if given:
        return given
    pending = tk.get(session, turn).pending_input
    if pending is None:
        fail(f"turn {turn} has no open input request")
    return pending.request_id


ReasonOpt = Annotated[str, typer.Option(help="why (recorded with the answer)")]
RequestArg = Annotated[
    str | None, typer.Argument(help="the request id (default: the turn's open one)")
]


@app.command(rich_help_panel="Turns")
def approve(
    ctx: typer.Context,
    session: Annotated[str, typer.Argument(help="the session id")],
    turn: Annotated[str, typer.Argument(help="the turn id")],
    request_id: RequestArg = None,
    reason: ReasonOpt = "",
    url: UrlOpt = None,
    token: TokenOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Approve a turn's open approval request."""
    out = _out(ctx, url, token, as_json)
    with out.client() as tk:
        rid = _request_id(tk, session, turn, request_id)
        out.turn(tk.approve(session, turn, rid, reason))


@app.command(rich_help_panel="Turns")
def deny(
    ctx: typer.Context,
    session: Annotated[str, typer.Argument(help="the session id")],
    turn: Annotated[str, typer.Argument(help="the turn id")],
    request_id: RequestArg = None,
    reason: ReasonOpt = "",
    url: UrlOpt = None,
    token: TokenOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Deny a turn's open approval request."""
    out = _out(ctx, url, token, as_json)
    with out.client() as tk:
        rid = _request_id(tk, session, turn, request_id)
        out.turn(tk.deny(session, turn, rid, reason))


@app.command(rich_help_panel="Turns")
def cancel(
    ctx: typer.Context,
    session: Annotated[str, typer.Argument(help="the session id")],
    turn: Annotated[str, typer.Argument(help="the turn id")],
    url: UrlOpt = None,
    token: TokenOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Cancel a turn. At once, unless a worker is stepping it."""
    out = _out(ctx, url, token, as_json)
    with out.client() as tk:
        out.turn(tk.cancel(session, turn))


def _attachment_file(path: Path) -> tuple[str, str, bytes, str]:
    """(filename, content type, bytes, upload key) of a file to attach. The key is
    the content's: submitting again uploads nothing new, the same attachment answers."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise typer.BadParameter(str(exc), param_hint="--attach") from None
    kind = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
    if path.suffix.lower() == ".md":
        kind = "text/markdown"  # not in every platform's mime table
    digest = hashlib.sha256(path.name.encode() + b"\0" + data).hexdigest()
    return path.name, kind, data, f"att-{digest[:40]}"


@app.command(rich_help_panel="Turns")
def fork(
    ctx: typer.Context,
    session: Annotated[str, typer.Argument(help="the session to fork")],
    at_seq: Annotated[int, typer.Argument(min=1, help="the last seq the fork keeps")],
    new_session: Annotated[
        str | None, typer.Option(help="the new session's id (default: a new one)")
    ] = None,
    url: UrlOpt = None,
    token: TokenOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Fork a session at a seq into a new one (the source is untouched)."""
    out = _out(ctx, url, token, as_json)
    with out.client() as tk:
        forked = tk.fork(session, at_seq, new_session_id=new_session)
    if out.json:
        out.document(forked.model_dump(mode="json"))
        return
    cut = f"; left out: {', '.join(forked.cut_turns)}" if forked.cut_turns else ""
    out.show(
        Text(
            f"{forked.session_id}  forked from {session} at seq {at_seq}"
            f" (head {forked.head_seq}){cut}"
        )
    )


# -- listings ----------------------------------------------------------------------------

LimitOpt = Annotated[int, typer.Option(min=1, help="show at most this many")]
AllOpt = Annotated[bool, typer.Option("--all", help="every one, page after page")]
#: the API's largest page (api/routes_sessions.py)
_PAGE = 500


def _pages(fetch: Any, limit: int, every: bool) -> list[Any]:
    """Items of ``fetch(limit=, before=) -> (items, next)`` pages, newest first."""
    found: list[Any] = []
    before = None
    while True:
        items, before = fetch(_PAGE if every else min(_PAGE, limit - len(found)), before)
        found.extend(items)
        if before is None or (not every and len(found) >= limit):
            return found


def _listing(
    out: Out,
    page: Callable[[Client, int, str | None], Any],
    items: str,
    table: Callable[..., Any],
    limit: int,
    every: bool,
) -> None:
    """Print a listing: ``page(client, n, before)`` answers a page whose ``items``
    attribute holds them and ``next`` the cursor; ``table`` renders them."""
    with out.client() as tk:

        def fetch(n: int, before: str | None) -> tuple[list[Any], str | None]:
            answered = page(tk, n, before)
            return list(getattr(answered, items)), answered.next

        found = _pages(fetch, limit, every)
    if out.json:
        out.document([x.model_dump(mode="json") for x in found])
    else:
        out.show(table(found, boxed=out.console.is_terminal))


@app.command(rich_help_panel="Listings")
def sessions(
    ctx: typer.Context,
    limit: LimitOpt = 20,
    every: AllOpt = False,
    url: UrlOpt = None,
    token: TokenOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """The tenant's sessions, newest first."""
    out = _out(ctx, url, token, as_json)
    _listing(
        out,
        lambda tk, n, before: tk.sessions(limit=n, before=before),
        "sessions",
        render.sessions_table,
        limit,
        every,
    )


@app.command(rich_help_panel="Listings")
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
    out = _out(ctx, url, token, as_json)
    _listing(
        out,
        lambda tk, n, before: tk.turns(session, limit=n, before=before),
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
app.add_typer(projects_app, name="projects", rich_help_panel="Listings")


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
    out = _out(ctx, url, token, as_json)
    _listing(
        out,
        lambda tk, n, before: tk.projects(limit=n, before=before),
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
    out = _out(ctx, url, token, as_json)
    with out.client() as tk:
        made = tk.create_project(project, overrides=_overrides(overrides))
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
    out = _out(ctx, url, token, as_json)
    with out.client() as tk:
        _project_out(out, tk.project(project))


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
    out = _out(ctx, url, token, as_json)
    with out.client() as tk:
        _project_out(out, tk.update_project(project, _overrides(overrides) or {}))


def _project_out(out: Out, project: Project) -> None:
    if out.json:
        out.document(project.model_dump(mode="json"))
    else:
        out.show(render.projects_table([project], boxed=out.console.is_terminal))
        if project.overrides:
            out.show(Text(json.dumps(project.overrides, indent=2)))


# -- tokens ------------------------------------------------------------------------------

tokens_app = typer.Typer(
    help="Bearer tokens. Make one, list the configured ones, get a stream token.",
    no_args_is_help=True,
)
app.add_typer(tokens_app, name="tokens", rich_help_panel="Listings")

#: the prefix of the tokens ``tokens new`` makes (what a secret scanner can look for)
TOKEN_PREFIX = "tk_"


def new_token(tenant: str, subject: str, role: str) -> tuple[str, dict[str, str]]:
    """A fresh random bearer token, and its ``TURNKEEP_TOKENS`` entry (only its
    SHA-256). ``ValueError`` for a tenant, subject or role the API would refuse."""
    from api.auth import TokenTable, token_digest

    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    entry = {"sha256": token_digest(token), "tenant": tenant, "subject": subject, "role": role}
    TokenTable.parse(json.dumps([entry]))  # the API's own checks, patterns included
    return token, entry


def token_entries(raw: str) -> list[dict[str, str]]:
    """The entries of a ``TURNKEEP_TOKENS`` value, checked as the API checks them
    (``ValueError``), each with its role (``member`` when absent)."""
    from api.auth import TokenTable

    TokenTable.parse(raw)
    items = json.loads(raw) if raw.strip() else []
    return [
        {
            "tenant": str(item["tenant"]),
            "subject": str(item["subject"]),
            "role": str(item.get("role", Role.MEMBER.value)),
            "sha256": str(item["sha256"]).lower(),
        }
        for item in items
    ]


@tokens_app.command("new")
def tokens_new(
    ctx: typer.Context,
    tenant: Annotated[str, typer.Option(help="the tenant it stands for")],
    subject: Annotated[str, typer.Option(help="who it is (recorded as `by`)")],
    role: Annotated[Role, typer.Option(help="its role in the tenant")] = Role.MEMBER,
    append: Annotated[
        bool, typer.Option("--append", help="keep the entries TURNKEEP_TOKENS holds now")
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """A new bearer token (shown once) and its TURNKEEP_TOKENS entry (its sha256 only)."""
    needs_server("turnkeep tokens new")  # the API's own checks (api/auth.py)
    out = _out(ctx, None, None, as_json)
    raw = os.environ.get("TURNKEEP_TOKENS", "") if append else ""
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


@tokens_app.command("list")
def tokens_list(ctx: typer.Context, as_json: JsonOpt = False) -> None:
    """The tokens TURNKEEP_TOKENS configures: tenant, subject, role, digest prefix."""
    needs_server("turnkeep tokens list")  # the API's own checks (api/auth.py)
    out = _out(ctx, None, None, as_json)
    try:
        entries = token_entries(os.environ.get("TURNKEEP_TOKENS", ""))
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
    out = _out(ctx, url, token, as_json)
    with out.client() as tk:
        issued = tk.stream_token(session).model_dump(mode="json")
        base = tk.config.url
    if out.json:
        out.document(issued)
        return
    print(f"stream token  {issued['token']}")
    print(f"expires       {issued['expires_at']}")
    print(f"  curl -N '{base}/v1/sessions/{session}/events?stream_token={issued['token']}'")


# -- entry point -------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    """The console script: ``turnkeep <command> …``; the exit status (docs/cli.md)."""
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        app(args=args, prog_name="turnkeep")
    except Unreachable as exc:
        sys.stderr.write(f"error: {exc}\n")
        return EXIT_UNREACHABLE
    except TurnkeepError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return EXIT_PROBLEM
    return 0


if __name__ == "__main__":
    sys.exit(main())
