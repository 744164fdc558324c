"""The turn state machine and the journal's event types.

Both are persisted names: compatibility data, pinned in tests/unit/test_persisted_names.py.
The allowed transitions live here once; the store's named SQL mirrors them in its guards.
"""

from __future__ import annotations

from enum import StrEnum


class TurnState(StrEnum):
    """Where a turn is. Terminal states never change."""

    #: admitted and committed; waits for its lane (queued -> running)
    QUEUED = "queued"
    #: a worker holding the session's lease is stepping it (running -> waiting |
    #: needs_reconciliation | completed | failed | cancelled)
    RUNNING = "running"
    #: parked on an input request or approval; no lease is held (waiting -> running)
    WAITING = "waiting"
    #: an effectful tool's outcome is unknown after a crash; parked until someone
    #: says what happened (needs_reconciliation -> running)
    NEEDS_RECONCILIATION = "needs_reconciliation"
    #: terminal: the final answer is committed
    COMPLETED = "completed"
    #: terminal: ended with a typed error
    FAILED = "failed"
    #: terminal: ended by a cancellation request
    CANCELLED = "cancelled"

    @property
    def terminal(self) -> bool:
        return self in TERMINAL_STATES


TERMINAL_STATES = frozenset({TurnState.COMPLETED, TurnState.FAILED, TurnState.CANCELLED})
ACTIVE_STATES = frozenset(set(TurnState) - TERMINAL_STATES)
#: states a worker can make progress in without anyone's answer
RUNNABLE_STATES = frozenset({TurnState.QUEUED, TurnState.RUNNING})
#: states no worker is stepping: a cancellation settles them at once, in the API's
#: own statement; a running turn only gets the request and stops at a safe point
UNATTENDED_STATES = frozenset({TurnState.QUEUED, TurnState.WAITING, TurnState.NEEDS_RECONCILIATION})
#: parked on an input request: a worker moves them on once it is answered
PARKED_STATES = frozenset({TurnState.WAITING, TurnState.NEEDS_RECONCILIATION})

TRANSITIONS: dict[TurnState, frozenset[TurnState]] = {
    TurnState.QUEUED: frozenset({TurnState.RUNNING, TurnState.FAILED, TurnState.CANCELLED}),
    TurnState.RUNNING: frozenset(
        {
            TurnState.RUNNING,
            TurnState.WAITING,
            TurnState.NEEDS_RECONCILIATION,
            TurnState.COMPLETED,
            TurnState.FAILED,
            TurnState.CANCELLED,
        }
    ),
    TurnState.WAITING: frozenset({TurnState.RUNNING, TurnState.FAILED, TurnState.CANCELLED}),
    TurnState.NEEDS_RECONCILIATION: frozenset(
        {TurnState.RUNNING, TurnState.FAILED, TurnState.CANCELLED}
    ),
    TurnState.COMPLETED: frozenset(),
    TurnState.FAILED: frozenset(),
    TurnState.CANCELLED: frozenset(),
}


class EventType(StrEnum):
    """One committed journal record's type."""

    #: the API admitted the turn (carries the input)
    TURN_ACCEPTED = "turn.accepted"
    #: a worker claimed the turn under a new fence (carries the attempt)
    TURN_STARTED = "turn.started"
    #: a model call's outcome: text and the tool calls it asked for (one per step)
    MODEL_COMPLETED = "model.completed"
    #: a tool call's result (one per step)
    TOOL_COMPLETED = "tool.completed"
    #: an effectful tool's outcome is unknown after a crash; a synthetic error result
    TOOL_INTERRUPTED = "tool.interrupted"
    #: the turn parks on a typed request someone answers (runtime/inputs.py)
    INPUT_REQUESTED = "input.requested"
    #: that answer arrived
    INPUT_RESOLVED = "input.resolved"
    #: older transcript replaced by a summary after a context overflow
    CONTEXT_COMPACTED = "context.compacted"
    #: the turn moved to another definition of its agent at a safe point (a newer
    #: version deployed, an operator's upgrade, or its own no longer served)
    TURN_DEFINITION_CHANGED = "turn.definition_changed"
    #: a model call waits for its provider rate limit: the attempt ends and gives back
    #: its thread and lease, the session is sent again when the call's slot comes
    #: (runtime/pacing.py)
    TURN_PACED = "turn.paced"
    #: someone asked for the turn to stop
    TURN_CANCEL_REQUESTED = "turn.cancel_requested"
    #: no longer written (a park is an ``input.requested`` of kind reconciliation);
    #: kept so journals written before it stay valid
    TURN_NEEDS_RECONCILIATION = "turn.needs_reconciliation"
    #: terminal: the final answer
    TURN_COMPLETED = "turn.completed"
    #: terminal: a typed error
    TURN_FAILED = "turn.failed"
    #: terminal: cancelled
    TURN_CANCELLED = "turn.cancelled"


#: at most one of these per (turn, step); the schema enforces it with a unique index
OUTCOME_EVENTS = frozenset(
    {EventType.MODEL_COMPLETED, EventType.TOOL_COMPLETED, EventType.TOOL_INTERRUPTED}
)
TERMINAL_EVENTS = {
    TurnState.COMPLETED: EventType.TURN_COMPLETED,
    TurnState.FAILED: EventType.TURN_FAILED,
    TurnState.CANCELLED: EventType.TURN_CANCELLED,
}


class ErrorCode(StrEnum):
    """Typed errors a turn can end with (persisted in ``turns.error``)."""

    #: claimed more times than the attempt cap allows (a poison turn)
    RETRY_EXHAUSTED = "retry_exhausted"
    #: a bound of the turn's budget or the agent's limits was reached
    BUDGET_EXCEEDED = "budget_exceeded"
    #: the final answer did not validate against the output schema
    OUTPUT_INVALID = "output_invalid"
    #: the model provider failed permanently
    MODEL_FAILED = "model_failed"
    #: the prompt did not fit the model's context even after one compaction
    CONTEXT_OVERFLOW = "context_overflow"
    #: the turn's definition is served by no live worker and its agent's newest
    #: version does not accept turns of its version (``upgrades_from``)
    AGENT_CHANGED = "agent_changed"
    #: the model asked for a tool the agent does not have, repeatedly
    UNKNOWN_TOOL = "unknown_tool"
    #: the agent's definition cannot run: an unknown model provider or bad model
    #: options (fails at once: retrying cannot fix it)
    DEFINITION_INVALID = "definition_invalid"
    #: a reply came from a model the agent's policy does not allow (fails closed)
    MODEL_NOT_ALLOWED = "model_not_allowed"
    #: a processor of the agent's definition blocked the input, a request or an answer
    PROCESSOR_BLOCKED = "processor_blocked"
    #: no live worker declares the turn's agent name any more
    AGENT_REMOVED = "agent_removed"
