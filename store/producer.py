"""The one producer of ``run_session`` messages (and of a settled turn's prompt webhook
delivery), and the Celery settings every turnkeep process shares (STYLE.md #16: build
each shared thing once).

Who sends: the API after an admission or an answer, the worker after a release, the
recovery scan. All of them go through ``Producer``; the worker's Celery app *is* the
producer's app, with the worker-only settings added on top (worker/app.py), so the
two sides cannot drift apart on the serializer, the queue or the task name.

The message is the task name (runtime/names.py) and ids only,
``(tenant_id, session_id)``: never the input. A lost enqueue (broker down) is not an
error for the caller: the turn is committed, and the recovery scan finds it and
enqueues it again. So a send gives up after a few quick tries, and only the error's
type is ever logged (the broker URL may hold a password).

Imports nothing of ``api`` or ``worker``: both use it.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from celery import Celery

from runtime.names import TASK_DELIVER_WEBHOOKS, TASK_RUN_SESSION
from runtime.settings import Settings

log = logging.getLogger(__name__)

#: a down broker must not hold a request's (or a worker thread's) time for long: a
#: few quick tries, then it is the recovery scan's job
PUBLISH_RETRY_POLICY: dict[str, float] = {
    "max_retries": 2,
    "interval_start": 0,
    "interval_step": 0.2,
    "interval_max": 0.5,
}
#: seconds to connect to the broker before a try counts as failed
BROKER_CONNECTION_TIMEOUT = 2.0


def celery_config(settings: Settings) -> dict[str, Any]:
    """The Celery settings of every turnkeep app: what a producer needs, and what the
    worker must agree with (it adds its own on top)."""
    return {
        "broker_url": settings.effective_broker_url,
        "task_default_queue": settings.queue,
        "task_serializer": "json",
        "accept_content": ["json"],
        "task_publish_retry": True,
        "task_publish_retry_policy": dict(PUBLISH_RETRY_POLICY),
        "broker_connection_timeout": BROKER_CONNECTION_TIMEOUT,
    }


def celery_app(settings: Settings) -> Celery:
    """A Celery app with ``celery_config``; not made the current app."""
    app = Celery("turnkeep", set_as_current=False)
    app.conf.update(celery_config(settings))
    return app


_lock = threading.Lock()
#: the process's producers, by (broker URL, queue)
_producers: dict[tuple[str, str], Producer] = {}


class Producer:
    """Sends ``run_session(tenant_id, session_id)`` to the queue by task name.

    Thread-safe. One Celery app, so one broker connection pool, per producer; use
    ``from_settings`` to get the process's one producer rather than building more.
    """

    def __init__(self, app: Celery, queue: str) -> None:
        self.app = app
        self.queue = queue

    @classmethod
    def from_settings(cls, settings: Settings) -> Producer:
        """The process's producer for the settings' broker and queue: built on the
        first call, the same object on every later one (the worker's Celery app is
        this producer's app, see worker/app.py)."""
        key = (settings.effective_broker_url, settings.queue)
        with _lock:
            producer = _producers.get(key)
            if producer is None:
                producer = _producers[key] = cls(celery_app(settings), settings.queue)
            return producer

    def send(self, tenant_id: str, session_id: str) -> None:
        """Send the task; raises the broker's error once the quick retries are spent."""
        self.app.send_task(TASK_RUN_SESSION, args=[tenant_id, session_id], queue=self.queue)

    def enqueue(self, tenant_id: str, session_id: str) -> bool:
        """Send the task; False (logged by error type only, never raised) when the
        broker refused it: the recovery scan will enqueue the session again."""
        try:
            self.send(tenant_id, session_id)
        except Exception as exc:  # broker down or misconfigured
            log.warning(
                "enqueue of run_session failed (%s); recovery will retry it", type(exc).__name__
            )
            return False
        return True

    def deliver_webhook(self, tenant_id: str, session_id: str, turn_id: str) -> bool:
        """Send the prompt delivery of a settled turn's webhook (ids only); False
        (logged by error type, never raised) when the broker refused it: beat's
        delivery pass finds the webhook anyway."""
        try:
            self.app.send_task(
                TASK_DELIVER_WEBHOOKS, args=[tenant_id, session_id, turn_id], queue=self.queue
            )
        except Exception as exc:  # broker down or misconfigured
            log.warning(
                "enqueue of a webhook delivery failed (%s); beat will deliver it",
                type(exc).__name__,
            )
            return False
        return True

    def close(self) -> None:
        """Close the broker connections; the next ``from_settings`` builds anew."""
        with _lock:
            for key, producer in list(_producers.items()):
                if producer is self:
                    del _producers[key]
        self.app.close()
