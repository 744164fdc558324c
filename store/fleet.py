"""The live workers and the agent definitions each serves, in Redis (store/keys.py).

A worker process advertises its definition hashes and agent names every TTL/3 under
a key that expires after a TTL; the lane reads them to hand a turn it does not serve
to a worker that does (its definition's queue, ``definition_queue``), the API to show
a turn no live worker can run as held, and ``GET /v1/agents/{name}/versions`` to list
who serves what. Liveness is the key's TTL: a killed worker drops out a TTL later,
one that shuts down warm withdraws at once.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import cast

import redis

from turnkeep.store import keys

__all__ = ["Fleet", "WorkerAd", "definition_queue"]


def definition_queue(queue: str, definition_hash: str) -> str:
    """The queue only workers serving ``definition_hash`` consume (beside ``queue``)."""
    return f"{queue}.def.{definition_hash[:16]}"


@dataclass(frozen=True)
class WorkerAd:
    """One live worker process as it advertised itself."""

    worker: str
    host: str
    seen_at: float
    #: each definition hash served: (agent name, version)
    definitions: dict[str, tuple[str, str]]

    @property
    def hashes(self) -> set[str]:
        return set(self.definitions)

    @property
    def names(self) -> set[str]:
        return {n for n, _ in self.definitions.values()}

    def serves(self, name: str) -> dict[str, str]:
        """The definitions of agent ``name`` it serves: {hash: version}."""
        return {h: v for h, (n, v) in self.definitions.items() if n == name}


class Fleet:
    """Advertisements of the live workers."""

    def __init__(self, client: redis.Redis) -> None:
        self.redis = client

    def advertise(
        self,
        owner: str,
        host: str,
        definitions: Mapping[str, tuple[str, str]],
        *,
        ttl: float,
    ) -> None:
        """``definitions``: each hash served, its (agent name, version)."""
        ad = {
            "host": host,
            "definitions": {h: list(nv) for h, nv in definitions.items()},
            "at": time.time(),
        }
        with self.redis.pipeline(transaction=False) as pipe:
            pipe.set(keys.worker_key(owner), json.dumps(ad), px=max(1, int(ttl * 1000)))
            pipe.sadd(keys.workers_key(), owner)
            pipe.execute()

    def withdraw(self, owner: str) -> None:
        with self.redis.pipeline(transaction=False) as pipe:
            pipe.delete(keys.worker_key(owner))
            pipe.srem(keys.workers_key(), owner)
            pipe.execute()

    def live(self) -> list[WorkerAd]:
        """Every worker whose advertisement has not expired (two round trips)."""
        members = cast(set[bytes], self.redis.smembers(keys.workers_key()))
        owners = sorted(o.decode() if isinstance(o, bytes) else str(o) for o in members)
        if not owners:
            return []
        values = cast(list[bytes | None], self.redis.mget([keys.worker_key(o) for o in owners]))
        ads: list[WorkerAd] = []
        gone: list[str] = []
        for owner, raw in zip(owners, values, strict=True):
            if raw is None:
                gone.append(owner)
                continue
            ad = json.loads(raw)
            ads.append(
                WorkerAd(
                    worker=owner,
                    host=str(ad.get("host", "")),
                    seen_at=float(ad.get("at", 0.0)),
                    definitions={
                        str(h): (str(nv[0]), str(nv[1]))
                        for h, nv in (ad.get("definitions") or {}).items()
                    },
                )
            )
        if gone:
            self.redis.srem(keys.workers_key(), *gone)
        return ads

    def served(self) -> tuple[set[str], set[str]]:
        """(definition hashes, agent names) some live worker serves."""
        hashes: set[str] = set()
        names: set[str] = set()
        for ad in self.live():
            hashes.update(ad.hashes)
            names.update(ad.names)
        return hashes, names
