"""``turnkeep``: the processes of a deployment, and a client of its API, in one command.

Processes: each becomes the ordinary command of the ecosystem (so an operator can run
either under any supervisor), with the remaining arguments passed through as given:

    turnkeep api [uvicorn args]       uvicorn turnkeep.api.app:app
    turnkeep worker [celery args]     celery -A turnkeep.worker.app worker
    turnkeep beat [celery args]       celery -A turnkeep.worker.app beat
    turnkeep flower [flower args]     celery -A turnkeep.worker.app flower, behind basic auth
                                      (TURNKEEP_FLOWER_BASIC_AUTH), on 127.0.0.1
    turnkeep migrate                  alembic upgrade head on TURNKEEP_MIGRATE_URL
    turnkeep acp --agent NAME         ACP over stdio for editors (turnkeep/acp.py)
    turnkeep dev [--once]             all of them on this machine, and a demo turn
                                      (``make run``; turnkeep/dev.py)

Client commands (docs/cli.md), on the API at ``--url``/TURNKEEP_URL with
``--token``/TURNKEEP_TOKEN: ``submit``, ``tail``, ``show``, ``answer``, ``approve``,
``deny``, ``cancel``, ``fork``, ``rerun``, ``feedback``, ``scores``, ``sessions``,
``turns``, ``inbox``, ``search turns|sessions``, ``projects``, ``tokens
new|list|stream``, ``schedules``, ``agents``, ``versions``, ``upgrade``, ``promote`` and
``eval …`` (datasets, experiments, comparisons: docs/evaluation.md). Output is rich on a
terminal and plain text anywhere else; ``--json`` is for machines (one JSON document,
JSON lines for a tail).
Exit status: 0 done; 1 the API answered a problem (``error: <status> <code>:
<detail>`` on stderr); 2 a usage error or a refused configuration; 3 the API was
unreachable; 4 the turn waited for or followed ended failed or cancelled; 5 ``--wait``
timed out before the turn settled or parked.

The modules: ``app`` (the typer app and ``main``), ``processes`` (the service's
processes and ``dev``; Flower's authentication), ``server_extra`` (what a client-only
install refuses), ``output`` (options, printing, exit statuses), ``turn_commands``
(submit, tail, show, cancel, fork, rerun), ``following`` (waiting and tailing), ``answers``
(answer, approve, deny), ``listings`` (sessions, turns, projects), ``search_commands``
(search turns and sessions), ``token_commands``, ``schedule_commands``,
``version_commands`` (agents, versions, upgrade) and ``eval_commands`` with
``eval_tables`` (eval …, promote). A
client-only install imports all of them: the server's modules are only ever run as
processes.
"""

from turnkeep.cli.answers import answer_body
from turnkeep.cli.app import app, main
from turnkeep.cli.output import (
    EXIT_PROBLEM,
    EXIT_TIMEOUT,
    EXIT_TURN_FAILED,
    EXIT_UNREACHABLE,
    EXIT_USAGE,
    Out,
    fail,
)
from turnkeep.cli.processes import COMMANDS, flower_env, process
from turnkeep.cli.server_extra import SERVER_EXTRA, SERVER_MODULES, needs_server, refuse
from turnkeep.cli.token_commands import TOKEN_PREFIX, new_token, token_entries

__all__ = [
    "COMMANDS",
    "EXIT_PROBLEM",
    "EXIT_TIMEOUT",
    "EXIT_TURN_FAILED",
    "EXIT_UNREACHABLE",
    "EXIT_USAGE",
    "SERVER_EXTRA",
    "SERVER_MODULES",
    "TOKEN_PREFIX",
    "Out",
    "answer_body",
    "app",
    "fail",
    "flower_env",
    "main",
    "needs_server",
    "new_token",
    "process",
    "refuse",
    "token_entries",
]
