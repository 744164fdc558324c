"""How many turns ran at once, read from the journal (never from logs): a turn holds a
slot from its first ``turn.started`` until it ends or parks."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

#: events after which a turn no longer runs (it ended, or parked on a wait)
LEAVES = {"turn.completed", "turn.failed", "turn.cancelled", "input.requested"}


Span = tuple[datetime, datetime, str]


def running_spans(store: Any, turns: Iterable[tuple[str, str, str]]) -> list[Span]:
    """(start, end, turn id) of each stretch a turn ran, from its journal."""
    spans: list[Span] = []
    for tenant, sid, tid in turns:
        start = None
        for event in store.reads.turn_events(tenant, sid, tid):
            if event.type == "turn.started" and start is None:
                start = event.created_at
            elif event.type in LEAVES and start is not None:
                spans.append((start, event.created_at, tid))
                start = None
        assert start is None, f"turn {tid} never left running"
    return spans


def most_at_once(spans: list[Span]) -> int:
    """The most spans open at one instant (an end at the instant another starts does
    not overlap it: the slot was handed on)."""
    edges = sorted([(s, 1) for s, _, _ in spans] + [(e, -1) for _, e, _ in spans])
    most = now = 0
    for _, step in edges:
        now += step
        most = max(most, now)
    return most
