"""The provider-neutral transcript, rebuilt from the journal in seq order by the one
projection the worker uses too (``turnkeep.runtime.journal.messages``). Every message carries
the ``turn_id`` and ``seq`` of the event it came from.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from turnkeep.runtime.journal import messages
from turnkeep.runtime.messages import public_message
from turnkeep.store.records import EventRecord


def transcript(events: Iterable[EventRecord]) -> list[dict[str, Any]]:
    """Without provider metadata (thinking blocks and their signatures): those go back
    to their provider only, never to a reader (runtime/messages.py)."""
    return [{**public_message(m), "turn_id": e.turn_id, "seq": e.seq} for e, m in messages(events)]
