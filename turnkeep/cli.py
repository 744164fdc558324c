"""``turnkeep``: the processes of a deployment under one command.

Each subcommand becomes the ordinary command of the ecosystem (so an operator can run
either under any supervisor), with the remaining arguments passed through:

    turnkeep api [uvicorn args]       uvicorn api.app:app
    turnkeep worker [celery args]     celery -A worker.app worker
    turnkeep beat [celery args]       celery -A worker.app beat
    turnkeep flower [flower args]     celery -A worker.app flower, behind basic auth
                                      (TURNKEEP_FLOWER_BASIC_AUTH), on 127.0.0.1
    turnkeep migrate                  alembic upgrade head on TURNKEEP_MIGRATE_URL
    turnkeep acp --agent NAME         ACP over stdio for editors (turnkeep/acp.py), on the
                                      API at TURNKEEP_URL with TURNKEEP_TOKEN

Configuration is the environment's (``TURNKEEP_*``), as for every process.

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
from typing import NoReturn

COMMANDS: dict[str, list[str]] = {
    "api": [sys.executable, "-m", "uvicorn", "api.app:app"],
    "worker": [sys.executable, "-m", "celery", "-A", "worker.app", "worker"],
    "beat": [sys.executable, "-m", "celery", "-A", "worker.app", "beat"],
    "flower": [sys.executable, "-m", "celery", "-A", "worker.app", "flower"],
    "migrate": [sys.executable, "-m", "store.migrate"],
    "acp": [sys.executable, "-m", "turnkeep.acp"],
}

USAGE = "usage: turnkeep {" + ",".join(COMMANDS) + "} [args ...]\n\n" + (__doc__ or "")


def command(argv: Sequence[str]) -> list[str]:
    """The command line a ``turnkeep`` invocation becomes. ``SystemExit(2)`` with the
    usage for an unknown or missing subcommand."""
    if not argv or argv[0] not in COMMANDS:
        sys.stderr.write(USAGE)
        raise SystemExit(0 if argv and argv[0] in ("-h", "--help") else 2)
    return [*COMMANDS[argv[0]], *argv[1:]]


def refuse(message: str) -> NoReturn:
    """A subcommand's configuration is unsafe or malformed: say why, exit 2."""
    sys.stderr.write(f"turnkeep: {message}\n")
    raise SystemExit(2)


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


def main(argv: Sequence[str] | None = None) -> None:
    given = list(sys.argv[1:] if argv is None else argv)
    args, env = command(given), dict(os.environ)
    if given[0] == "flower":
        extra, env = flower_env(given[1:], os.environ)
        args = [*COMMANDS["flower"], *extra]
    # the process becomes the service: signals reach it directly
    os.execve(args[0], args, env)


if __name__ == "__main__":
    main()
