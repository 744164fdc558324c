"""The live-event channel: Redis pub/sub per session (see store/keys.py).

Committed events are published only after their commit; model text deltas are
published live and never persisted. Subscribers must treat the channel as a hint:
a publish can be lost (the worker died between commit and publish), so readers
fill any gap from the journal in Postgres.

A message is one JSON object: ``{"kind": "event", "event": {...}}``, ``{"kind":
"delta", "turn_id", "step", "text"}``, ``{"kind": "deleted"}``, or ``{"kind":
"batch", "items": [...]}``, several of those in the order they were sent. A commit's
events go out as one batch (one ``PUBLISH`` per commit, not one per event), and so
does whatever a worker's publisher found queued for one session at once. ``decode``
unpacks a batch: subscribers see the same messages, in the same order, either way.
"""

from __future__ import annotations

import logging
import os
import queue
import threading
from typing import Any

import redis

from turnkeep.runtime import jsonwire
from turnkeep.store.keys import events_channel
from turnkeep.store.records import EventRecord

log = logging.getLogger(__name__)


def encode_committed(event: EventRecord) -> str:
    return jsonwire.dumps({"kind": "event", "event": event.to_json()})


def encode_delta(turn_id: str, step: int, text: str) -> str:
    return jsonwire.dumps({"kind": "delta", "turn_id": turn_id, "step": step, "text": text})


#: the kind of the message that says a session was deleted (docs/erasure.md): its
#: followers re-read it, are answered 410, and stop
DELETED = "deleted"


def encode_deleted() -> str:
    return jsonwire.dumps({"kind": DELETED})


#: the kind of a message that carries several, in order
BATCH = "batch"


def encode_batch(payloads: list[str]) -> str:
    """One message for several encoded ones (one alone is sent as it is), their order kept."""
    if len(payloads) == 1:
        return payloads[0]
    return '{"kind":"' + BATCH + '","items":[' + ",".join(payloads) + "]}"


def decode(payload: bytes | str) -> list[dict[str, Any]]:
    """The messages one channel payload carries, in order (a batch unpacked). Raises
    ``ValueError`` for one that is not JSON."""
    data = jsonwire.loads(payload)
    if isinstance(data, dict) and data.get("kind") == BATCH:
        return [item for item in data.get("items", ()) if isinstance(item, dict)]
    return [data] if isinstance(data, dict) else []


def by_channel(batch: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """(channel, payload) pairs as one message per channel, each channel's payloads in
    their order (channels are independent: nothing orders one against another)."""
    grouped: dict[str, list[str]] = {}
    for channel, payload in batch:
        grouped.setdefault(channel, []).append(payload)
    return [(channel, encode_batch(payloads)) for channel, payloads in grouped.items()]


class Publisher:
    """Publishes on the session channels. Failures are logged, never raised: the
    journal is the truth and readers recover a lost publish from it."""

    def __init__(self, client: redis.Redis) -> None:
        self.client = client

    def committed(self, *events: EventRecord) -> None:
        """Publish committed events: one message per session, a batch of several."""
        self._send(
            [(events_channel(e.tenant_id, e.session_id), encode_committed(e)) for e in events]
        )

    def delta(self, tenant_id: str, session_id: str, turn_id: str, step: int, text: str) -> None:
        self._send([(events_channel(tenant_id, session_id), encode_delta(turn_id, step, text))])

    def deleted(self, tenant_id: str, session_id: str) -> None:
        """Tell the session's followers it was deleted (after its tombstone committed)."""
        self._send([(events_channel(tenant_id, session_id), encode_deleted())])

    def _send(self, batch: list[tuple[str, str]]) -> None:
        """Publish (channel, payload) pairs: one message per channel (``by_channel``),
        more than one channel in one pipelined round trip."""
        if not batch:
            return
        batch = by_channel(batch)
        try:
            if len(batch) == 1:
                self.client.publish(*batch[0])
                return
            pipe = self.client.pipeline(transaction=False)
            for channel, payload in batch:
                pipe.publish(channel, payload)
            pipe.execute()
        except redis.RedisError as exc:
            log.warning("publish failed for %d messages: %s", len(batch), type(exc).__name__)


class BackgroundPublisher(Publisher):
    """A worker process's publisher: committed events and deltas go to one thread that
    sends whatever has gathered in one pipelined round trip, one message per session
    (a commit's events always together), so a step does not wait for Redis and many
    turns in flight share round trips. Order is kept (one FIFO, one sender). A
    publish still queued when the process dies is lost, which the channel's contract
    allows: readers fill gaps from the journal."""

    #: most sends (a commit's events, a delta) gathered into one pipeline
    BATCH = 256

    def __init__(self, client: redis.Redis) -> None:
        super().__init__(client)
        self._queue: queue.SimpleQueue[list[tuple[str, str]]] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._pid = 0

    def _send(self, batch: list[tuple[str, str]]) -> None:
        self._ensure_thread()
        self._queue.put(batch)  # whole: a commit's events leave in one message

    def _ensure_thread(self) -> None:
        # per process: a prefork child inherits the object but not the thread
        if self._thread is not None and self._pid == os.getpid():
            return
        with self._lock:
            if self._thread is None or self._pid != os.getpid():
                self._queue = queue.SimpleQueue()  # the parent's pending items are not ours
                self._pid = os.getpid()
                self._thread = threading.Thread(
                    target=self._run, name="event-publisher", daemon=True
                )
                self._thread.start()

    def _run(self) -> None:
        q = self._queue
        while True:
            batch = list(q.get())
            for _ in range(self.BATCH - 1):
                try:
                    batch += q.get_nowait()
                except queue.Empty:
                    break
            Publisher._send(self, batch)
