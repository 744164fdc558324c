"""The Redis keys of a session that its erasure deletes, and the tenant's shared sets
it leaves: the registry's Redis holders marked deleted or member
(store/erasure_registry.py), under the deployment's prefix. A pattern
with a part other than the tenant and the session (a turn, a request) is found with
SCAN; ids cannot hold a glob character (store/keys.py)."""

from __future__ import annotations

import redis

from turnkeep.store.erasure_registry import How, Kind, holders
from turnkeep.store.errors import Unavailable
from turnkeep.store.keys import prefix


class _Star(dict[str, str]):
    def __missing__(self, key: str) -> str:
        return "*"


def patterns(tenant_id: str, session_id: str, how: How = How.DELETED) -> list[str]:
    """Each holder's key (or glob) for this session, of those erased ``how``."""
    ids = _Star(tenant=tenant_id, session=session_id)
    return [f"{prefix()}:{h.name.format_map(ids)}" for h in holders(Kind.REDIS) if h.how is how]


class SessionKeys:
    def __init__(self, client: redis.Redis) -> None:
        self.client = client

    def erase(self, tenant_id: str, session_id: str) -> int:
        """Delete its keys and take its id out of the tenant's shared sets; how many
        keys there were. ``Unavailable`` when Redis is away (the erasure sweep sends
        the task again)."""
        try:
            found = self._keys(patterns(tenant_id, session_id))
            deleted: int = self.client.delete(*found) if found else 0  # type: ignore[assignment]
            shared = self._keys(patterns(tenant_id, session_id, How.MEMBER))
            if shared:
                pipe = self.client.pipeline(transaction=False)
                for key in shared:
                    pipe.zrem(key, session_id)
                pipe.execute()
            return deleted
        except redis.RedisError as exc:
            raise Unavailable("redis is unavailable") from exc

    def _keys(self, globs: list[str]) -> list[str | bytes]:
        found: list[str | bytes] = []
        for pattern in globs:
            if "*" in pattern:
                found += self.client.scan_iter(match=pattern, count=1000)
            else:
                found.append(pattern)
        return found
