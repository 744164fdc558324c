"""What a client-only install (``pip install turnkeep``) lacks: the server
(``pip install turnkeep-server``: the service's code, deploy/server/, and the server
extra's libraries). The commands that run part of the service check for it first and
say what to install (exit 2) instead of failing on an import of the child or of this
process."""

from __future__ import annotations

import importlib.util
import sys
from typing import NoReturn

#: a usage error or a refused configuration (docs/cli.md)
EXIT_USAGE = 2

#: what the service's processes import: turnkeep-server's code and the server extra's
#: libraries. ``pip install turnkeep`` is the client alone (the client commands, the ACP
#: agent), without them
SERVER_MODULES = (
    "turnkeep.api",
    "turnkeep.worker",
    "turnkeep.store",
    "celery",
    "fastapi",
    "uvicorn",
    "psycopg",
    "sqlalchemy",
    "alembic",
    "flower",
)
SERVER_EXTRA = "pip install turnkeep-server"


def refuse(message: str) -> NoReturn:
    """A subcommand's configuration is unsafe or malformed: say why, exit 2."""
    sys.stderr.write(f"turnkeep: {message}\n")
    raise SystemExit(EXIT_USAGE)


def needs_server(command: str) -> None:
    """A command that runs part of the service, in a client-only install: say what to
    install (exit 2) instead of failing on an import of the child or of this process."""
    missing = [m for m in SERVER_MODULES if importlib.util.find_spec(m) is None]
    if missing:
        refuse(f"{command} needs the server ({', '.join(missing)} not installed): " + SERVER_EXTRA)
