"""Following a session's event stream, without I/O: the text/event-stream framing
(``SSEParser``) and the ``Cursor`` that turns frames into events, knows where the
stream stands and how it resumes (``Last-Event-ID``), and how long to pause after a
drop. The sync and async clients only read lines into it."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import httpx
from pydantic import ValidationError

from turnkeep.client.errors import ApiError, ResyncRequired, Unreachable, checked
from turnkeep.models import Delta, Event


@dataclass
class Frame:
    """One dispatched SSE frame; ``comment`` for a ``:`` line (the heartbeat)."""

    event: str = "message"
    id: str | None = None
    data: list[str] = field(default_factory=list)
    comment: bool = False


class SSEParser:
    """The text/event-stream framing, fed one line at a time (without its newline)."""

    def __init__(self) -> None:
        self._frame = Frame()
        self._fields = False

    def feed(self, line: str) -> Frame | None:
        if line == "":
            frame, fields = self._frame, self._fields
            self._frame, self._fields = Frame(), False
            return frame if fields else None
        if line.startswith(":"):
            return Frame(comment=True)
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        self._fields = True
        if name == "data":
            self._frame.data.append(value)
        elif name == "event":
            self._frame.event = value
        elif name == "id":
            self._frame.id = value
        return None


class Reconnect(Exception):
    """The stream ended or failed in a way its next connection recovers from."""


#: what a followed stream reconnects after (anything else ends it)
RETRYABLE = (httpx.TransportError, Reconnect)


def _json(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


@dataclass
class Cursor:
    """Where a followed stream stands, and how it resumes: after every committed event
    it yielded, from that seq (``Last-Event-ID``); a connection that delivered nothing
    at all (not even a heartbeat) counts as a failure, ``retries`` in a row give up."""

    last: int
    retries: int
    backoff: float
    failures: int = 0
    _parser: SSEParser = field(default_factory=SSEParser, repr=False)

    def headers(self) -> dict[str, str]:
        return {"Accept": "text/event-stream", "Last-Event-ID": str(self.last)}

    def opened(self, response: httpx.Response) -> None:
        """A connection answered (its body read when it is a problem): a 5xx or 429
        reconnects, another problem raises; the framing starts afresh."""
        if response.status_code >= 500 or response.status_code == 429:
            raise Reconnect(f"HTTP {response.status_code}")
        checked(response)
        self._parser = SSEParser()

    def line(self, line: str, deltas: bool = False) -> Event | Delta | None:
        """What one line of the stream completes, if anything."""
        frame = self._parser.feed(line)
        return None if frame is None else self.take(frame, deltas)

    def take(self, frame: Frame, deltas: bool = False) -> Event | Delta | None:
        if frame.comment:
            self.failures = 0  # a heartbeat: the connection is alive
            return None
        if frame.event == "stream.resume":  # a lagging reader: go on from the journal
            raise Reconnect("stream.resume")
        if frame.event == "stream.resync_required":
            info = _json("\n".join(frame.data))
            raise ResyncRequired(
                "resync_required", "the retention cut passed the cursor", problem=info
            )
        if frame.event == "stream.session_deleted":  # as a read of it now answers
            info = _json("\n".join(frame.data))
            raise ApiError("session_deleted", "the session was deleted", status=410, problem=info)
        self.failures = 0
        if frame.id is None:  # model.delta: speculative, never numbered
            if not deltas or frame.event != "model.delta":
                return None
            try:
                return Delta.model_validate_json("\n".join(frame.data))
            except ValidationError:
                return None  # a speculative frame is not worth failing the stream for
        try:
            event = Event.model_validate_json("\n".join(frame.data))
        except ValidationError as exc:  # reconnecting would read the same frame again
            raise ApiError("invalid_event", f"event {frame.id}: {exc}") from None
        if event.seq <= self.last:
            return None
        self.last = event.seq
        return event

    def dropped(self, why: object) -> float:
        """The delay before the next connection; ``Unreachable`` past ``retries``."""
        self.failures += 1
        if self.failures > self.retries:
            raise Unreachable(f"the event stream failed {self.failures} times in a row: {why}")
        return float(min(self.backoff * 2 ** (self.failures - 1), 5.0))
