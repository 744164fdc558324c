"""Durable timers: a tool call that says "wake me at T" (``ToolContext.sleep_until``, or
an agent's declared ``wait_tool``) parks its turn on a request of kind ``timer``,
answered by the runtime alone: the recovery scan wakes it once T has passed, as it
settles every request past its expiry (recovery/scan.py). The turn holds no worker
and no lease meanwhile; it can be cancelled, and shows as waiting on its timer
(docs/flow-control.md). Woken, the call runs again and ``sleep_until`` returns at once.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from turnkeep.runtime.signals import Signal

#: the longest a call may sleep: a session lasts months, a timer up to a year
MAX_SLEEP_SECONDS = 366 * 24 * 3600.0

#: what the scan answers a timer with (nobody else may)
WOKEN: dict[str, Any] = {"woken": True}

TIMER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"woken": {"const": True}},
    "required": ["woken"],
    "additionalProperties": False,
}


class SleepRequested(Signal):
    """Raised by ``ToolContext.sleep_until`` for a wake time still ahead: a signal, not
    an error. The tool step parks the turn on a ``timer`` request expiring at ``until``."""

    def __init__(self, until: datetime) -> None:
        super().__init__(f"sleeping until {until.isoformat()}")
        self.until = until

    def seconds(self, now: datetime | None = None) -> float:
        """How long until the wake time (at least 0)."""
        return max(0.0, (self.until - (now or datetime.now(UTC))).total_seconds())


def wake_time(when: datetime) -> datetime:
    """``when`` as an aware UTC time; ValueError for a naive one or one too far ahead."""
    if when.tzinfo is None or when.utcoffset() is None:
        raise ValueError("sleep_until needs an aware datetime (with a time zone)")
    at = when.astimezone(UTC)
    if (at - datetime.now(UTC)).total_seconds() > MAX_SLEEP_SECONDS:
        raise ValueError(f"a timer wakes at most {MAX_SLEEP_SECONDS:g} s ahead")
    return at
