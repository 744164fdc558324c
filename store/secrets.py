"""Answers that must not be stored: the credentials of an ``external_auth`` request.

They live in Redis under a TTL (the request's remaining life, at least a minute),
keyed by tenant, session, turn and request (store/keys.py), until the tool that
asked for them has run. The journal and the turn row keep only their hash. Should
Redis lose one (a restart), the tool runs without it, asks again, and someone
answers the new request: a secret is never worth a durable copy.
"""

from __future__ import annotations

import contextlib
import json
from typing import Any

import redis

from turnkeep.store.errors import Unavailable
from turnkeep.store.keys import secret_key

#: the shortest life a handed-over secret gets, whatever the request's expiry says
MIN_TTL = 60.0


class SecretBox:
    def __init__(self, client: redis.Redis) -> None:
        self.client = client

    def put(
        self,
        tenant_id: str,
        session_id: str,
        turn_id: str,
        request_id: str,
        value: dict[str, Any],
        *,
        ttl: float,
    ) -> None:
        key = secret_key(tenant_id, session_id, turn_id, request_id)
        try:
            self.client.set(key, json.dumps(value), px=int(max(ttl, MIN_TTL) * 1000))
        except redis.RedisError as exc:
            raise Unavailable("redis is unavailable") from exc

    def get(
        self, tenant_id: str, session_id: str, turn_id: str, request_id: str
    ) -> dict[str, Any] | None:
        """The answer, or None when it is gone (expired, or Redis lost it)."""
        key = secret_key(tenant_id, session_id, turn_id, request_id)
        try:
            raw = self.client.get(key)
        except redis.RedisError:
            return None  # the tool asks again: a new request, answered again
        if raw is None:
            return None
        value: dict[str, Any] = json.loads(raw)  # type: ignore[arg-type]
        return value

    def discard(self, tenant_id: str, session_id: str, turn_id: str, request_id: str) -> None:
        # a failed delete leaves it to its TTL
        with contextlib.suppress(redis.RedisError):
            self.client.delete(secret_key(tenant_id, session_id, turn_id, request_id))
