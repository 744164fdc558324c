"""kombu's Redis transport with one synchronous client per channel.

kombu's Redis channel builds a new ``redis.Redis`` for every operation it runs
without one (``Channel.conn_or_acquire``: every publish, every acknowledgement and
every delivery's unacked bookkeeping), and a ``redis.Redis`` copies its table of
response callbacks when it is made: a profile of a worker draining turns put 6 % of
its CPU there (bench ``--py-spy``). A ``redis.Redis`` is safe to share between
threads (each command takes a pooled connection), so the channel keeps one, built
from the same pool kombu would have used. The asynchronous client (the event loop's
BRPOP and pub/sub connection) is kombu's own, untouched.
"""

from __future__ import annotations

import os
from typing import Any

import kombu.transport as kombu_transport
from kombu.transport import TRANSPORT_ALIASES
from kombu.transport import redis as kombu_redis


class Channel(kombu_redis.Channel):
    _sync_client: Any = None
    _sync_pid = 0

    def _create_client(self, asynchronous: bool = False) -> Any:
        if asynchronous:
            return super()._create_client(asynchronous=True)  # type: ignore[no-untyped-call]
        # per process: a forked child must not share its parent's client object
        if self._sync_client is None or self._sync_pid != os.getpid():
            self._sync_client = super()._create_client()  # type: ignore[no-untyped-call]
            self._sync_pid = os.getpid()
        return self._sync_client


class Transport(kombu_redis.Transport):
    Channel = Channel


#: kombu's name for a plain Redis broker, and the class it resolves to once installed
SCHEME = "redis"
PATH = f"{__name__}:Transport"


def install() -> None:
    """Make ``redis://`` broker URLs resolve to this transport in this process (kombu
    looks the name up when a connection is made). Installed under kombu's own name, not
    a new one, because the name is what kombu writes into the URL it reports and Flower
    picks its broker reader by that URL's scheme. ``rediss://`` keeps kombu's class,
    whose TLS set-up keys on that name. Called by store/producer.py ``celery_app``,
    which builds every turnkeep Celery app; idempotent."""
    TRANSPORT_ALIASES[SCHEME] = PATH
    # kombu keeps each name's class once resolved: a connection made before this call
    # (a test's own Celery app, say) must not pin kombu's class for the process
    cache = getattr(kombu_transport, "_transport_cache", None)
    if isinstance(cache, dict) and cache.get(SCHEME) is not Transport:
        cache.pop(SCHEME, None)
