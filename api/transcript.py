"""The provider-neutral transcript, rebuilt from the journal in seq order.

Per turn: the ``turn.accepted`` input messages, then each ``model.completed``
assistant message and each ``tool.completed`` / ``tool.interrupted`` tool message
(``data["message"]``, as the worker writes them). Every message carries the
``turn_id`` and ``seq`` of the event it came from.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from runtime.states import EventType
from store.records import EventRecord

_MESSAGE_EVENTS = frozenset(
    {EventType.MODEL_COMPLETED, EventType.TOOL_COMPLETED, EventType.TOOL_INTERRUPTED}
)


def _tagged(message: Any, event: EventRecord) -> dict[str, Any] | None:
    if not isinstance(message, dict):
        return None
    return {**message, "turn_id": event.turn_id, "seq": event.seq}


def transcript(events: Iterable[EventRecord]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for event in events:
        if event.type == EventType.TURN_ACCEPTED:
            given = (event.data.get("input") or {}).get("messages") or []
            out.extend(m for m in (_tagged(g, event) for g in given) if m is not None)
        elif event.type in _MESSAGE_EVENTS:
            m = _tagged(event.data.get("message"), event)
            if m is not None:
                out.append(m)
    return out
