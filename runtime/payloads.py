"""Each journal event's payload (``events.data``): ``EventPayload``, one union of a
frozen type (a msgspec Struct) per event type, tagged by the event's type.

Writers build these and commit ``to_json()``; readers take ``payload(event)`` (or a
type's ``from_json``) instead of reading the dict by key. The JSON is compatibility
data (the events table, the SSE stream and the API serve it as stored): a payload
holds exactly the keys it was given and gives them back in order
(runtime/jsonrecord.py), so an older row missing a key reads as the field's default
and is written back without it, and a newer row's unknown keys are kept.
tests/unit/test_payloads.py round-trips a sample of every type.

A few payloads are written in SQL (``turn.accepted``, ``turn.started``,
``input.resolved``, a cancellation's two events: store/sql/turns.sql); their types
here are read-only declarations of what that SQL writes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Protocol, get_args

from turnkeep.runtime.admission import TurnInput
from turnkeep.runtime.jsonrecord import JsonRecord, key
from turnkeep.runtime.states import EventType


class Payload(JsonRecord, frozen=True):
    """One event's ``data``."""

    TYPE: ClassVar[EventType]


class TurnAccepted(Payload, frozen=True):
    """The API admitted the turn (written by ``admit_turn``)."""

    TYPE = EventType.TURN_ACCEPTED

    input: TurnInput = key(TurnInput(), nested=TurnInput)
    #: the agent's name
    agent: str = key("")
    #: who submitted it (the principal's subject)
    by: str = key("")


class TurnStarted(Payload, frozen=True):
    """A worker claimed the turn (written by ``start_turn``)."""

    TYPE = EventType.TURN_STARTED

    attempt: int = key(0)


class ModelCompleted(Payload, frozen=True):
    """A model call's outcome."""

    TYPE = EventType.MODEL_COMPLETED
    OMIT_EMPTY = frozenset(
        {"receipts", "charged_cost", "lost_tries", "correction", "provider_state"}
    )

    #: the assistant message (runtime/messages.py's JSON)
    message: dict[str, Any] = key({})
    usage: dict[str, Any] = key({})
    #: the model that answered, as the provider reported it
    model: str | None = key()
    #: the answered call's wall time and its provider retries
    duration_ms: int | None = key()
    retries: int | None = key()
    #: USD from runtime/pricing.py's table; None for a model it does not price
    cost: float | None = key()
    #: the model policy's receipt (runtime/model_policy.py)
    decision: dict[str, Any] | None = key()
    #: the processors' receipts (runtime/processors.py)
    receipts: list[dict[str, Any]] | None = key()
    #: the cost charged for it, attempts that died since the last progress included
    charged_cost: float | None = key()
    lost_tries: int | None = key()
    #: a final answer that failed the output schema: what the model is told
    #: (``{"n": ..., "error": ...}``); the turn does not settle on it
    correction: dict[str, Any] | None = key()
    #: the provider whose opaque state of this call (its reasoning: the envelope of
    #: runtime/messages.py) is kept apart from the journal, in ``provider_state``
    #: (docs/erasure.md); the state itself is never here
    provider_state: str | None = key()


class ToolOutcome(Payload, frozen=True):
    """What a tool step's outcome carries, whichever its event type."""

    #: the tool message (runtime/messages.py's JSON)
    message: dict[str, Any] = key({})
    #: the tool's name, version and effect (an unknown tool's: its name, no version)
    tool: str | None = key()
    version: str | None = key()
    effect: str | None = key()


class ToolCompleted(ToolOutcome, frozen=True):
    """A tool call's result (or a delegation's join)."""

    TYPE = EventType.TOOL_COMPLETED

    #: a delegation's specialist
    specialist: str | None = key()
    #: the error code of a failed call (tool_failed, tool_timeout, unknown_tool, ...)
    error: str | None = key()
    #: a reconciled call's reported outcome (null when nobody answered in time)
    reconciled: str | None = key()
    #: the wall time of every try, and the tries after the first
    duration_ms: int | None = key()
    retries: int | None = key()
    #: what a delegation's children spent (``tokens``, ``cost_usd``)
    children_usage: dict[str, Any] | None = key()


class ToolInterrupted(ToolOutcome, frozen=True):
    """An effectful call's outcome is unknown: a synthetic error result."""

    TYPE = EventType.TOOL_INTERRUPTED

    #: crash or timeout
    reason: str | None = key()


class InputRequested(Payload, frozen=True):
    """A typed request the turn parks on (runtime/inputs.py builds it); the same
    object is kept on the turn as its ``pending_input``."""

    TYPE = EventType.INPUT_REQUESTED

    request_id: str = key("")
    kind: str = key("")
    tenant_id: str = key("")
    session_id: str = key("")
    turn_id: str = key("")
    step: int | None = key()
    at_seq: int | None = key()
    #: the tool's reference (name, version, schema hash) of a call's request
    tool: dict[str, Any] | None = key()
    call_id: str | None = key()
    arguments: dict[str, Any] | None = key()
    arguments_hash: str | None = key()
    response_schema: dict[str, Any] = key({})
    response_schema_hash: str | None = key()
    #: ISO 8601
    expires_at: str | None = key()
    answered_by: dict[str, Any] = key({})
    #: what the request says of itself, by kind
    detail: dict[str, Any] = key({})


class InputResolved(Payload, frozen=True):
    """The answer to a request (written by ``resolve_input``)."""

    TYPE = EventType.INPUT_RESOLVED

    request_id: str = key("")
    kind: str | None = key()
    step: int | None = key()
    #: the answer (``{"expired": true}`` when the scan settled it unanswered; a secret
    #: answer's only as its hash)
    response: dict[str, Any] = key({})
    response_hash: str | None = key()
    by: str | None = key()


class ContextCompacted(Payload, frozen=True):
    """Older conversation replaced by a summary (runtime/window.py)."""

    TYPE = EventType.CONTEXT_COMPACTED

    #: the summary (None only for a compaction of nothing, which is never written)
    summary: str | None = key("")
    #: the source range, earlier compactions' included (older rows have no ``to_seq``:
    #: they covered everything before themselves)
    from_seq: int | None = key()
    to_seq: int | None = key()
    #: the compaction this one carries on from
    supersedes: int | None = key()
    model: str | None = key()
    prompt_hash: str | None = key()
    usage: dict[str, Any] = key({})
    chunks: int | None = key()
    before_step: int | None = key()
    #: budget or overflow
    reason: str | None = key()
    #: USD, should a compaction carry it (counted by the cost bound)
    cost: float | None = key()
    charged_cost: float | None = key()


class Cancellation(Payload, frozen=True):
    """Who asked a turn to stop, and why (an interrupting turn's admission)."""

    by: str | None = key()
    #: ``interrupted`` by a newer turn of the lane (multitask interrupt)
    reason: str | None = key()
    by_turn: str | None = key()


class DefinitionChanged(Payload, frozen=True):
    """The turn runs on another definition of its agent from here (docs/deploy.md)."""

    TYPE = EventType.TURN_DEFINITION_CHANGED

    from_hash: str = key("")
    to_hash: str = key("")
    #: None: the old definition is not declared where the move was made
    from_version: str | None = key()
    to_version: str = key("")
    #: ``newer_version``, ``requested`` or ``not_served`` (runtime/deploys.py)
    reason: str = key("")


class TurnPaced(Payload, frozen=True):
    """A model call waits for its rate limits' slot (runtime/pacing.py): booked, it goes
    at ``until`` (ISO 8601, UTC) once the session is delivered again."""

    TYPE = EventType.TURN_PACED
    OMIT_EMPTY = frozenset({"refusals"})

    until: str = key("")
    wait_ms: int = key(0)
    #: the declared limit's name that set the time (runtime/ratelimits.py)
    limit: str = key("")
    #: ``requests``, ``tokens`` (the limit's own pace) or ``provider`` (the provider
    #: asked for the wait: a 429's Retry-After, a limit it reports used up)
    reason: str = key("")
    #: tokens booked for the call (its estimate and reserved output)
    tokens: int = key(0)
    #: the provider's refusals (429) of the call so far
    refusals: int | None = key()


class TurnCancelRequested(Cancellation, frozen=True):
    """Someone asked the turn to stop (written by the cancellation statements)."""

    TYPE = EventType.TURN_CANCEL_REQUESTED


class TurnNeedsReconciliation(Payload, frozen=True):
    """No longer written (a park is an ``input.requested`` of kind reconciliation);
    read as journals before it wrote it."""

    TYPE = EventType.TURN_NEEDS_RECONCILIATION

    tool: str | None = key()
    version: str | None = key()
    effect: str | None = key()
    step: int | None = key()
    call_id: str | None = key()


class TurnCompleted(Payload, frozen=True):
    """Terminal: the final answer (``{"text": ..., "output": ...}``)."""

    TYPE = EventType.TURN_COMPLETED

    result: dict[str, Any] = key({})


class TurnFailed(Payload, frozen=True):
    """Terminal: a typed error (``{"code": ..., "message": ...}``)."""

    TYPE = EventType.TURN_FAILED
    OMIT_EMPTY = frozenset({"receipts"})

    error: dict[str, Any] = key({})
    #: processor runs no other event carries (a blocked call's, the error processors')
    receipts: list[dict[str, Any]] | None = key()


class TurnCancelled(Cancellation, frozen=True):
    """Terminal: cancelled (by the worker: empty; by a statement: who asked)."""

    TYPE = EventType.TURN_CANCELLED


#: an event's payload: one union of a type per event type, tagged by the event's type
#: (its own column, ``events.type``, not a key of the JSON): ``parse`` picks the member
EventPayload = (
    TurnAccepted
    | TurnStarted
    | ModelCompleted
    | ToolCompleted
    | ToolInterrupted
    | InputRequested
    | InputResolved
    | ContextCompacted
    | DefinitionChanged
    | TurnPaced
    | TurnCancelRequested
    | TurnNeedsReconciliation
    | TurnCompleted
    | TurnFailed
    | TurnCancelled
)

#: the union's members by their tag
PAYLOADS: dict[EventType, type[EventPayload]] = {p.TYPE: p for p in get_args(EventPayload)}


class CommittedEvent(Protocol):
    """What ``payload`` reads of a committed event."""

    @property
    def type(self) -> str: ...
    @property
    def data(self) -> Mapping[str, Any]: ...


def parse(type: str, data: Mapping[str, Any] | None) -> EventPayload:
    """The payload of an event of ``type`` (``ValueError`` for a type not in EventType)."""
    return PAYLOADS[EventType(type)].from_json(data)


def payload(event: CommittedEvent) -> EventPayload:
    return parse(event.type, event.data)


def outcome_of(type: str, data: Mapping[str, Any] | None) -> ModelCompleted | ToolOutcome:
    """The payload of a step's outcome (``OUTCOME_EVENTS``); ``ValueError`` for another
    event type."""
    found = parse(type, data)
    if not isinstance(found, ModelCompleted | ToolOutcome):
        raise ValueError(f"{type} is not a step's outcome")
    return found
