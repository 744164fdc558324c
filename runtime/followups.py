"""Follow-up turns: a tool call that says "run this again at T" (``ToolContext.
schedule_turn``, or an agent's declared ``followup_tool``) makes a one-shot schedule
(runtime/schedules.py) whose tick admits a turn of the same session through the
ordinary admission, holding no worker and no lease meanwhile; a schedule like any
other, it is listed, paused, resumed and deleted (cancelled) over /v1/schedules and
in the console (docs/flow-control.md).

Its id is derived from the call (its idempotency key) and the tool's key, so a run of
the call again (after a crash, a timeout's retry) finds the schedule its first run
made: the first run's time and input stand, whatever the later run asks for. Pure:
the worker keeps the row (worker/followup_schedules.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

from turnkeep.runtime.hashing import sha256_hex
from turnkeep.runtime.timers import wake_time

#: the roles a follow-up's input may hold, as an admission's
ROLES = frozenset({"user", "system"})
#: a follow-up's message, at most (the API's bound on a message by default)
MAX_CHARS = 100_000


@dataclass(frozen=True)
class FollowUp:
    """The schedule a call made: its id and the time its turn is admitted at."""

    schedule_id: str
    at: datetime


class FollowUps(Protocol):
    """Where a tool call's follow-ups go (worker/followup_schedules.py keeps them in Postgres)."""

    def schedule(
        self, schedule_id: str, at: datetime, messages: list[dict[str, str]], agent: str | None
    ) -> FollowUp:
        """Make the one-shot schedule ``schedule_id`` unless it exists; the one made."""
        ...


def followup_id(idempotency_key: str, key: str) -> str:
    """The schedule of the call's follow-up ``key``: the same on every run of the call
    (an id of the schedules' alphabet, whatever the turn's id holds)."""
    return "followup-" + sha256_hex(f"{idempotency_key}#{key}")[:32]


def messages_of(given: str | list[dict[str, Any]]) -> list[dict[str, str]]:
    """A follow-up's input: a text (one user message) or messages of ``ROLES``;
    ``ValueError`` naming what is wrong."""
    raw = [{"role": "user", "content": given}] if isinstance(given, str) else given
    if not isinstance(raw, list) or not raw:
        raise ValueError("a follow-up's input is a text or a non-empty list of messages")
    found = []
    for m in raw:
        if not isinstance(m, dict) or set(m) != {"role", "content"}:
            raise ValueError("a follow-up's message is {'role': ..., 'content': ...}")
        role, content = m["role"], m["content"]
        if role not in ROLES or not isinstance(content, str) or not content:
            raise ValueError("a follow-up's message has a role user or system and a text")
        if len(content) > MAX_CHARS or "\x00" in content:
            raise ValueError(f"a follow-up's message is at most {MAX_CHARS} characters, no NUL")
        found.append({"role": role, "content": content})
    return found


def followup_time(when: datetime) -> datetime:
    """``when`` as an aware UTC time (a time past: the schedules' next pass admits the
    turn); ``ValueError`` for a naive one or one over a year ahead."""
    return wake_time(when).astimezone(UTC)
