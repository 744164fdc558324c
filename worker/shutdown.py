"""A worker's warm shutdown ends within its grace (``settings.worker.shutdown_grace``,
TURNKEEP_WORKER_SHUTDOWN_GRACE), whatever it waits for.

Celery's warm shutdown waits for its consumer to close, and a consumer whose broker has
gone reconnects in a loop that no further SIGTERM ends: a worker stopped after its Redis
(``turnkeep dev`` stopping the embedded servers, a broker lost in a rollout) would never
exit. So once a shutdown begins, a daemon thread gives it the grace, then logs and exits
hard (``os._exit``). Nothing is lost by it: the sessions the worker held lose their lease
and the recovery scan hands them to another worker, as after a crash; a message it had
taken is given back by the broker's visibility timeout.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import threading
import time

log = logging.getLogger(__name__)

#: the exit status of a worker whose warm shutdown outlived its grace
EXIT_OVERDUE = 70

_watching = threading.Lock()


def exit_within(grace: float) -> None:
    """From now, exit the process hard after ``grace`` seconds unless it ended first.
    Idempotent: a second SIGTERM does not push the deadline back."""
    if not _watching.acquire(blocking=False):
        return
    threading.Thread(
        target=_exit_after, args=(grace,), name="shutdown-deadline", daemon=True
    ).start()


def _exit_after(grace: float) -> None:
    time.sleep(grace)
    log.error(
        "warm shutdown still running after its %.0f s grace (TURNKEEP_WORKER_SHUTDOWN_GRACE): "
        "exiting now; the recovery scan takes what this worker held",
        grace,
    )
    for stream in (sys.stdout, sys.stderr):
        # a closed or broken stream: exit all the same
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(EXIT_OVERDUE)
