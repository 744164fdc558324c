"""The live-event channel: Redis pub/sub per session (see store/keys.py).

Committed events are published only after their commit; model text deltas are
published live and never persisted. Subscribers must treat the channel as a hint:
a publish can be lost (the worker died between commit and publish), so readers
fill any gap from the journal in Postgres.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import redis

from store.keys import events_channel
from store.records import EventRecord

log = logging.getLogger(__name__)


def encode_committed(event: EventRecord) -> str:
    return json.dumps({"kind": "event", "event": event.to_json()}, separators=(",", ":"))


def encode_delta(turn_id: str, step: int, text: str) -> str:
    return json.dumps(
        {"kind": "delta", "turn_id": turn_id, "step": step, "text": text}, separators=(",", ":")
    )


def decode(payload: bytes | str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(payload)
    return data


class Publisher:
    """Publishes on the session channels. Failures are logged, never raised: the
    journal is the truth and readers recover a lost publish from it."""

    def __init__(self, client: redis.Redis) -> None:
        self.client = client

    def committed(self, event: EventRecord) -> None:
        self._publish(event.tenant_id, event.session_id, encode_committed(event))

    def delta(self, tenant_id: str, session_id: str, turn_id: str, step: int, text: str) -> None:
        self._publish(tenant_id, session_id, encode_delta(turn_id, step, text))

    def _publish(self, tenant_id: str, session_id: str, payload: str) -> None:
        try:
            self.client.publish(events_channel(tenant_id, session_id), payload)
        except redis.RedisError as exc:
            log.warning("publish failed for a session channel: %s", type(exc).__name__)
