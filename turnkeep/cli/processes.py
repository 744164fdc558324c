"""The service's processes: each ``turnkeep <process>`` becomes the ordinary command of
its ecosystem (so an operator can run either under any supervisor), the remaining
arguments passed through as given, and replaces this process (``exec``: signals reach
it directly).

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

import os
import sys
from collections.abc import Mapping, Sequence
from typing import Annotated, NoReturn

import typer

from turnkeep.cli.server_extra import needs_server, refuse

COMMANDS: dict[str, list[str]] = {
    "api": [sys.executable, "-m", "uvicorn", "turnkeep.api.app:app"],
    "worker": [sys.executable, "-m", "celery", "-A", "turnkeep.worker.app", "worker"],
    "beat": [sys.executable, "-m", "celery", "-A", "turnkeep.worker.app", "beat"],
    "flower": [sys.executable, "-m", "celery", "-A", "turnkeep.worker.app", "flower"],
    "migrate": [sys.executable, "-m", "turnkeep.store.migrate"],
    "acp": [sys.executable, "-m", "turnkeep.acp"],
}

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
    from turnkeep.runtime.local_settings import FlowerSettings
    from turnkeep.runtime.settings import from_environ

    env = dict(environ)
    flower = from_environ(FlowerSettings, environ)
    own = any(a.split("=", 1)[0] in _FLOWER_AUTH_ARGS for a in args) or any(
        environ.get(k) for k in _FLOWER_AUTH_ENV
    )
    if flower.basic_auth:
        env["FLOWER_BASIC_AUTH"] = _basic_auth(flower.basic_auth)
    elif not (own or flower.unsafe_noauth):
        refuse(
            "flower refuses to start without authentication: set "
            "TURNKEEP_FLOWER_BASIC_AUTH=user:password (or TURNKEEP_FLOWER_UNSAFE_NOAUTH=1 "
            "to run it open, on a trusted network only)"
        )
    # first, so that an --address of the caller's (a later option) still wins
    return [f"--address={flower.address}", *args], env


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


_PASS_THROUGH = {"allow_extra_args": True, "ignore_unknown_options": True}
_PROCESSES = {
    "api": "The API: uvicorn turnkeep.api.app:app.",
    "worker": "A worker: celery -A turnkeep.worker.app worker.",
    "beat": "The scheduler: celery -A turnkeep.worker.app beat.",
    "flower": "Flower, behind basic auth, on 127.0.0.1. TURNKEEP_FLOWER_BASIC_AUTH=user:pw.",
    "migrate": "Migrate the database. alembic upgrade head as TURNKEEP_MIGRATE_URL.",
    "acp": "An ACP agent over stdio. On TURNKEEP_URL with TURNKEEP_TOKEN.",
}


def _process_command(app: typer.Typer, name: str, summary: str) -> None:
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


def dev(
    once: Annotated[bool, typer.Option("--once", help="stop after the demo turn")] = False,
    migrate_only: Annotated[bool, typer.Option("--migrate-only", help="only migrate")] = False,
    port: Annotated[int, typer.Option(envvar="TURNKEEP_PORT", help="the API's port")] = 8000,
    flower_port: Annotated[int, typer.Option(help="Flower's port")] = 5555,
) -> None:
    """Run it all here, with a demo turn (make run). Migrates, then starts the API,
    two workers, beat and Flower (logs in ./.run/) and submits a demo turn."""
    needs_server("turnkeep dev")
    # after the check: turnkeep/dev.py imports psycopg, which a client install lacks
    from turnkeep.dev import run

    raise typer.Exit(run(once=once, migrate_only=migrate_only, port=port, flower_port=flower_port))


def register(app: typer.Typer) -> None:
    """The process commands, then ``dev``, in the Processes panel."""
    for name, summary in _PROCESSES.items():
        _process_command(app, name, summary)
    app.command(rich_help_panel="Processes")(dev)
