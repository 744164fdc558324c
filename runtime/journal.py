"""The journal → conversation projection, defined once: the worker's model context
(runtime/plan.py) and the API's transcript (api/service/transcript.py) both read it.

Per turn, in seq order: the ``turn.accepted`` input messages, then the message of
each outcome event (``OUTCOME_EVENTS``: ``model.completed``, ``tool.completed``,
``tool.interrupted``), as the worker wrote it in its payload's ``message``
(runtime/payloads.py), and after a final answer that failed the output schema
(``ModelCompleted.correction``) the message that told the model so.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any, Protocol, TypeVar

from turnkeep.runtime.states import OUTCOME_EVENTS, EventType

#: the event types the conversation is made of (start_turn's context reads these)
CONVERSATION_EVENTS = frozenset({EventType.TURN_ACCEPTED, *OUTCOME_EVENTS})


class JournalEntry(Protocol):
    """What the projection reads of one committed event."""

    @property
    def seq(self) -> int: ...
    @property
    def type(self) -> str: ...
    @property
    def step(self) -> int | None: ...
    @property
    def data(self) -> dict[str, Any]: ...


E = TypeVar("E", bound=JournalEntry)


def messages(events: Iterable[E]) -> Iterator[tuple[E, dict[str, Any]]]:
    """Each message of the conversation with the event it came from, in journal order.
    Malformed entries (not a JSON object) are skipped, never guessed at."""
    # read straight from the stored data, not through each payload's record: this runs
    # over every row of the context window on every model call. The same reads as
    # TurnAccepted.from_json(...).input.messages and outcome_of(...).message/correction
    # (pinned by tests/unit/test_journal.py against them)
    for event in events:
        kind = event.type
        if kind == EventType.TURN_ACCEPTED:
            data = event.data
            given = data.get("input") if isinstance(data, Mapping) else None
            given = (given.get("messages") if isinstance(given, Mapping) else None) or []
            for m in given:
                if isinstance(m, dict):
                    yield event, m
        elif kind in OUTCOME_EVENTS:
            data = event.data if isinstance(event.data, Mapping) else {}
            message = data.get("message")
            if isinstance(message, dict):
                yield event, message
            fix = data.get("correction") if kind == EventType.MODEL_COMPLETED else None
            if isinstance(fix, dict):
                # what the model was told after an answer that failed the output schema
                yield event, {"role": "user", "content": correction_text(str(fix.get("error")))}


def correction_text(error: str) -> str:
    """The corrective message after a final answer that failed the output schema."""
    return (
        f"Your answer did not match the required output schema: {error}\n"
        "Answer again with only the JSON value that matches the schema."
    )
