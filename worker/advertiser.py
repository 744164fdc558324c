"""This worker process's advertisement of what it serves (store/fleet.py): its agent
definitions' hashes and names, under a key that lives one lease TTL, renewed every
TTL/3 from worker_ready until the worker starts shutting down. Its definitions'
queues (``definition_queue``) are consumed beside the main one from the start
(worker/app.py), so a turn handed on while the worker advertises is taken by it.
"""

from __future__ import annotations

import logging
import socket
import threading

from store.fleet import Fleet
from worker.resources import WorkerResources

log = logging.getLogger(__name__)


class Advertiser:
    def __init__(self, ctx: WorkerResources) -> None:
        self.ctx = ctx
        self.fleet = Fleet(ctx.redis)
        self.owner = ctx.owner_prefix
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def advertise(self) -> None:
        agents = self.ctx.agents
        self.fleet.advertise(
            self.owner,
            socket.gethostname(),
            agents.hashes,
            agents.names(),
            ttl=self.ctx.settings.lease_ttl,
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
            self._stop.wait(self.ctx.settings.lease_ttl / 3.0)

    def stop(self) -> None:
        """Withdraw at once: turns are handed to the workers that stay."""
        self._stop.set()
        try:
            self.fleet.withdraw(self.owner)
        except Exception as exc:
            log.warning("worker advertisement not withdrawn: %s", type(exc).__name__)
