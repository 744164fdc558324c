"""``turnkeep``: the processes of a deployment under one command.

Each subcommand becomes the ordinary command of the ecosystem (so an operator can run
either under any supervisor), with the remaining arguments passed through:

    turnkeep api [uvicorn args]       uvicorn api.app:app
    turnkeep worker [celery args]     celery -A worker.app worker
    turnkeep beat [celery args]       celery -A worker.app beat
    turnkeep flower [celery args]     celery -A worker.app flower
    turnkeep migrate                  alembic upgrade head on TURNKEEP_DATABASE_URL
    turnkeep acp --agent NAME         ACP over stdio for editors (turnkeep/acp.py), on the
                                      API at TURNKEEP_URL with TURNKEEP_TOKEN

Configuration is the environment's (``TURNKEEP_*``), as for every process.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

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


def main(argv: Sequence[str] | None = None) -> None:
    args = command(sys.argv[1:] if argv is None else argv)
    os.execv(args[0], args)  # the process becomes the service: signals reach it directly


if __name__ == "__main__":
    main()
