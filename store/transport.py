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

from kombu.transport import redis as kombu_redis

#: the URL schemes this transport serves (kombu's plain Redis transport's own)
SCHEMES = ("redis", "rediss")


class Channel(kombu_redis.Channel):
    def _create_client(self, asynchronous: bool = False) -> Any:
        if asynchronous:
            return super()._create_client(asynchronous=True)  # type: ignore[no-untyped-call]
        # per process: a forked child must not share its parent's client object
        cached = self.__dict__.get("_turnkeep_client")
        if cached is None or cached[0] != os.getpid():
            cached = (os.getpid(), super()._create_client())  # type: ignore[no-untyped-call]
            self.__dict__["_turnkeep_client"] = cached
        return cached[1]


class Transport(kombu_redis.Transport):
    Channel = Channel


#: the dotted path Celery's ``broker_transport`` takes
PATH = f"{__name__}:Transport"


def transport_for(broker_url: str) -> str | None:
    """This transport for a Redis broker URL; None (kombu's choice) for any other."""
    scheme = broker_url.split("://", 1)[0].lower() if "://" in broker_url else ""
    return PATH if scheme in SCHEMES else None
