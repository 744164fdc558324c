"""The API's Celery producer: it sends ``run_session`` by name and never runs tasks.

The message carries ids only, ``(tenant_id, session_id)``: never the input. A lost
enqueue (broker down) is not an error for the client: the turn is committed, and
the recovery scan finds it and enqueues it again.
"""

from __future__ import annotations

import logging

from celery import Celery

from runtime.names import QUEUE, TASK_RUN_SESSION

log = logging.getLogger(__name__)


class Enqueuer:
    """Sends ``run_session(tenant_id, session_id)`` to the turnkeep queue."""

    def __init__(self, broker_url: str, queue: str = QUEUE) -> None:
        self.queue = queue
        self.app = Celery("turnkeep-api", broker=broker_url, set_as_current=False)
        self.app.conf.update(
            task_serializer="json",
            accept_content=["json"],
            # a down broker must not hold a request thread for long: a few quick tries
            task_publish_retry=True,
            task_publish_retry_policy={
                "max_retries": 2,
                "interval_start": 0,
                "interval_step": 0.2,
                "interval_max": 0.5,
            },
            broker_connection_timeout=2,
        )

    def enqueue(self, tenant_id: str, session_id: str) -> bool:
        """Send the task; False (logged, never raised) when the broker refused it."""
        try:
            self.app.send_task(TASK_RUN_SESSION, args=[tenant_id, session_id], queue=self.queue)
        except Exception as exc:  # broker down or misconfigured: recovery will enqueue it
            # the broker URL may hold a password: log the error type only
            log.warning(
                "enqueue of run_session failed (%s); recovery will retry it", type(exc).__name__
            )
            return False
        return True

    def close(self) -> None:
        self.app.close()
