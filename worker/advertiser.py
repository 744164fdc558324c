"""This worker process's advertisement of what it serves (store/fleet.py): its agent
definitions' hashes and names, under a key that lives one lease TTL, renewed every
TTL/3 from worker_ready until the worker starts shutting down.

On the same beat it follows its definitions' queues (``definition_queue``), where a
worker that does not serve a definition hands its turns: it consumes one only while
messages wait there, through Celery's own add_consumer and cancel_consumer. Each
queue consumed beside the main one costs every delivery (kombu's Redis transport
drained 400 demo turns a third slower with one more queue), and hand-ons happen
only around a deploy; the price is up to TTL/3 before a handed-on turn is taken.
"""

from __future__ import annotations

import logging
import socket
import threading
from typing import Any

from turnkeep.store.fleet import Fleet, definition_queue
from turnkeep.worker.resources import WorkerResources

log = logging.getLogger(__name__)

#: rounds a followed queue stays consumed after it was last seen empty
IDLE_ROUNDS = 3


class Advertiser:
    def __init__(self, ctx: WorkerResources, app: Any = None, hostname: str = "") -> None:
        self.ctx = ctx
        self.app = app
        self.hostname = hostname
        self.fleet = Fleet(ctx.redis)
        self.owner = ctx.owner_prefix
        self.queues = [definition_queue(ctx.settings.broker.queue, h) for h in ctx.agents.hashes]
        #: followed queues consumed now, and the rounds each has been seen empty since
        self.consuming: dict[str, int] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def advertise(self) -> None:
        agents = self.ctx.agents
        definitions = {
            a.definition_hash: (a.name, a.version)
            for n in agents.names()
            for a in agents.versions(n)
        }
        self.fleet.advertise(
            self.owner, socket.gethostname(), definitions, ttl=self.ctx.settings.lease.ttl
        )

    def start(self) -> Advertiser:
        self._thread = threading.Thread(target=self._run, name="advertiser", daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.advertise()
            except Exception as exc:  # Redis away: the TTL withdraws us meanwhile
                log.warning("worker advertisement failed: %s", type(exc).__name__)
            try:
                self.follow()
            except Exception as exc:  # the broker away: the next round tries again
                log.warning("definition queues not followed: %s", type(exc).__name__)
            self._stop.wait(self.ctx.settings.lease.ttl / 3.0)

    def follow(self) -> None:
        """Consume each definition queue while messages wait on it (and, cut off from
        Postgres, none: whatever it took it could not write)."""
        if self.app is None or not self.queues:
            return
        reachable = self.ctx.reaches_postgres()
        depths = self.ctx.producer.queue_depths(self.queues)
        for queue in self.queues:
            # a broker whose depths cannot be read (not Redis): consumed all along
            waiting = depths is None or depths[queue] > 0
            if queue not in self.consuming:
                if waiting and reachable:
                    self._switch(queue, on=True)
                    self.consuming[queue] = 0
                continue
            self.consuming[queue] = 0 if waiting else self.consuming[queue] + 1
            if not reachable or self.consuming[queue] >= IDLE_ROUNDS:
                self._switch(queue, on=False)
                del self.consuming[queue]

    def _switch(self, queue: str, *, on: bool) -> None:
        command = self.app.control.add_consumer if on else self.app.control.cancel_consumer
        command(queue, destination=[self.hostname], reply=False)
        log.info("%s definition queue %s", "consuming" if on else "no longer consuming", queue)

    def stop(self) -> None:
        """Withdraw at once: turns are handed to the workers that stay."""
        self._stop.set()
        try:
            self.fleet.withdraw(self.owner)
        except Exception as exc:
            log.warning("worker advertisement not withdrawn: %s", type(exc).__name__)
