"""The loop rules: from a turn's committed journal, what happens next.

Pure functions over the journal, so the same rules run a fresh turn and resume one
after any crash (DESIGN.md, step 4): a model call without its ``model.completed`` is
made again; a tool call a committed model message asked for but without an outcome
runs again (read, idempotent) or follows the agent's policy (effectful).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from turnkeep.runtime import journal
from turnkeep.runtime.journal import JournalEntry
from turnkeep.runtime.messages import Message, Role, ToolCall, with_state
from turnkeep.runtime.payloads import (
    ContextCompacted,
    InputRequested,
    InputResolved,
    ModelCompleted,
    ToolCompleted,
)
from turnkeep.runtime.states import OUTCOME_EVENTS, EventType


@dataclass(frozen=True)
class CallModel:
    """Make the model call that is step ``step``."""

    step: int


@dataclass(frozen=True)
class RunTool:
    """Run the tool call that is step ``step``."""

    step: int
    call: ToolCall


@dataclass(frozen=True)
class Finish:
    """The model answered without tool calls: validate and settle."""

    text: str


Action = CallModel | RunTool | Finish


@dataclass(frozen=True)
class Progress:
    """Counts the budget checks need, from the journal."""

    model_calls: int
    tool_calls: int
    tokens: int
    #: USD charged for the turn's model calls so far (runtime/pricing.py)
    cost_usd: float = 0.0


SUMMARY_PREFIX = "[Summary of the conversation so far]\n"


def _repair(messages: list[Message]) -> list[Message]:
    """Answer every tool call that has no result (a turn that ended mid-step), and drop
    a result whose call is not there (a window that starts between the two), so the
    history stays a valid transcript for providers that insist on pairs."""
    out: list[Message] = []
    open_calls: list[ToolCall] = []
    # their ids, looked up by each result (this runs over every message of the window)
    open_ids: set[str] = set()
    for m in messages:
        role = m.role
        if role is Role.TOOL:
            if m.tool_call_id not in open_ids:
                continue
            out.append(m)
            open_calls = [c for c in open_calls if c.id != m.tool_call_id]
            open_ids = {c.id for c in open_calls}
            continue
        if open_calls:
            out += [
                tool_message(c, "error: not run (the turn ended)", is_error=True)
                for c in open_calls
            ]
            open_calls, open_ids = [], set()
        out.append(m)
        if role is Role.ASSISTANT and m.tool_calls:
            open_calls = list(m.tool_calls)
            open_ids = {c.id for c in open_calls}
    out += [tool_message(c, "error: not run (the turn ended)", is_error=True) for c in open_calls]
    return out


def decode(events: Sequence[JournalEntry]) -> dict[int, tuple[Message, ...]]:
    """Each event's messages (``journal.messages``), by seq: what ``transcript`` is given
    as ``decoded`` for a window a worker keeps (store/context_cache.py), so a row's
    JSON becomes messages once, not on every model call of every turn."""
    out: dict[int, list[Message]] = {e.seq: [] for e in events}
    for e, m in journal.messages(events):
        out[e.seq].append(Message.from_json(m))
    return {seq: tuple(ms) for seq, ms in out.items()}


def history(events: Sequence[JournalEntry]) -> list[Message]:
    """Earlier turns of the session, as messages: each turn's input, then its outcomes."""
    return _repair([Message.from_json(m) for _, m in journal.messages(events)])


def base(events: Sequence[JournalEntry]) -> JournalEntry | None:
    """The newest ``context.compacted`` among ``events``: the conversation's base."""
    found = None
    for e in events:
        if e.type == EventType.CONTEXT_COMPACTED and (found is None or e.seq > found.seq):
            found = e
    return found


def covered_to(compaction: JournalEntry) -> int:
    """The last seq a compaction summarised (older ones, without ``to_seq``, covered
    everything before themselves)."""
    to_seq = ContextCompacted.from_json(compaction.data).to_seq
    return int(to_seq) if to_seq is not None else compaction.seq - 1


def transcript(
    input_messages: Sequence[dict[str, Any]],
    events: Sequence[JournalEntry],
    prior: Sequence[JournalEntry] = (),
    state: Mapping[int, Mapping[str, Any]] | None = None,
    decoded: Mapping[int, Sequence[Message]] | None = None,
) -> list[Message]:
    """What the model sees: the newest compaction summary (of this turn or an earlier
    one), the earlier turns' conversation after it, the turn's input, then this turn's
    committed outcomes after it, in seq order. The input is always kept verbatim.
    ``state``: the provider state the model calls left, by their event's seq, kept out
    of the journal (docs/erasure.md), put back on their messages for the request.
    ``decoded``: ``prior``'s messages by seq (``decode``), when they are at hand; a row
    missing from it is decoded here."""
    if state:
        return _transcript(input_messages, events, prior, state, decoded)
    compaction = base([*prior, *events])
    cut = 0 if compaction is None else covered_to(compaction)
    head = (
        []
        if compaction is None
        else [
            Message(
                role=Role.USER,
                content=SUMMARY_PREFIX + str(ContextCompacted.from_json(compaction.data).summary),
            )
        ]
    )
    if decoded is None:
        told = [Message.from_json(m) for e, m in journal.messages(prior) if e.seq > cut]
    else:
        told = []
        for e in prior:
            if e.seq > cut:
                found = decoded.get(e.seq)
                told += decode([e]).get(e.seq, ()) if found is None else found
    earlier = _repair(told)
    body = [
        Message.from_json(m)
        for e, m in journal.messages(events)
        if e.type in OUTCOME_EVENTS and e.seq > cut
    ]
    return head + earlier + [Message.from_json(m) for m in input_messages] + body


def _transcript(
    input_messages: Sequence[dict[str, Any]],
    events: Sequence[JournalEntry],
    prior: Sequence[JournalEntry],
    state: Mapping[int, Mapping[str, Any]],
    decoded: Mapping[int, Sequence[Message]] | None,
) -> list[Message]:
    """``transcript`` with the model calls' provider state put back on their messages
    (a row given back its state is decoded again, not taken from ``decoded``)."""

    def restated(e: JournalEntry) -> JournalEntry:
        kept = state.get(e.seq) if e.type == EventType.MODEL_COMPLETED else None
        message = e.data.get("message") if kept is not None else None
        if kept is None or not isinstance(message, dict):
            return e
        data = {**e.data, "message": with_state(message, kept)}
        return _Entry(seq=e.seq, type=e.type, step=e.step, data=data)

    if decoded is not None:
        decoded = {seq: m for seq, m in decoded.items() if seq not in state}
    return transcript(
        input_messages,
        [restated(e) for e in events],
        [restated(e) for e in prior],
        decoded=decoded,
    )


@dataclass(frozen=True)
class _Entry:
    """A journal entry as read, its message given back its provider state."""

    seq: int
    type: str
    step: int | None
    data: dict[str, Any]


def summarisable(
    events: Sequence[JournalEntry], prior: Sequence[JournalEntry] = ()
) -> list[JournalEntry]:
    """The conversation events a new compaction would summarise: those after the
    current base, earlier turns' and this turn's."""
    compaction = base([*prior, *events])
    cut = 0 if compaction is None else covered_to(compaction)
    return [e for e in [*prior, *events] if e.type in journal.CONVERSATION_EVENTS and e.seq > cut]


def compacted(events: Sequence[JournalEntry]) -> bool:
    return any(e.type == EventType.CONTEXT_COMPACTED for e in events)


def _outcomes(events: Sequence[JournalEntry]) -> dict[int, JournalEntry]:
    return {e.step: e for e in events if e.type in OUTCOME_EVENTS and e.step is not None}


def pending_tool_steps(events: Sequence[JournalEntry]) -> list[RunTool]:
    """Tool calls of the newest model message that have no outcome yet, in order."""
    outcomes = _outcomes(events)
    model_steps = sorted(s for s, e in outcomes.items() if e.type == EventType.MODEL_COMPLETED)
    if not model_steps:
        return []
    last = model_steps[-1]
    message = Message.from_json(ModelCompleted.from_json(outcomes[last].data).message)
    return [
        RunTool(step=last + i, call=call)
        for i, call in enumerate(message.tool_calls, start=1)
        if (last + i) not in outcomes
    ]


def next_action(events: Sequence[JournalEntry]) -> Action:
    """What the turn does next, given its committed events."""
    outcomes = _outcomes(events)
    if not outcomes:
        return CallModel(step=1)
    pending = pending_tool_steps(events)
    if pending:
        return pending[0]
    last_step = max(outcomes)
    last = outcomes[last_step]
    if last.type == EventType.MODEL_COMPLETED:
        completed = ModelCompleted.from_json(last.data)
        message = Message.from_json(completed.message)
        if not message.tool_calls and not completed.correction:
            return Finish(text=message.content)
    # after tool results, or after an answer the model was told to correct
    return CallModel(step=last_step + 1)


def progress(events: Sequence[JournalEntry]) -> Progress:
    model = [
        ModelCompleted.from_json(e.data) for e in events if e.type == EventType.MODEL_COMPLETED
    ]
    tools = [e for e in events if e.type in (EventType.TOOL_COMPLETED, EventType.TOOL_INTERRUPTED)]
    tokens = sum(
        int(m.usage.get("input_tokens", 0)) + int(m.usage.get("output_tokens", 0)) for m in model
    )
    costed = (
        ModelCompleted.from_json(e.data)
        if e.type == EventType.MODEL_COMPLETED
        else ContextCompacted.from_json(e.data)
        for e in events
        if e.type in (EventType.MODEL_COMPLETED, EventType.CONTEXT_COMPACTED)
    )
    # charged_cost when the outcome has one (a recovered call charged again), else cost
    charged = (c.charged_cost if c.has("charged_cost") else c.cost for c in costed)
    cost = sum(float(c) for c in charged if isinstance(c, int | float))
    # a delegate call's join carries what its children spent: theirs counts as ours
    for e in tools:
        if e.type != EventType.TOOL_COMPLETED:
            continue
        spent = ToolCompleted.from_json(e.data).children_usage
        if isinstance(spent, dict):
            tokens += int(spent.get("tokens", 0))
            cost += float(spent.get("cost_usd", 0.0))
    return Progress(model_calls=len(model), tool_calls=len(tools), tokens=tokens, cost_usd=cost)


def lost_tries(events: Sequence[JournalEntry]) -> int:
    """Attempts that started since the turn's last progress and died before any: each
    may have made the call that is now made again, so it is charged again (counted
    from the journal: the ``turn.started`` events after the last outcome, answer or
    compaction, less this attempt's own, less those that ended waiting for a rate
    limit, ``turn.paced``, before the call)."""
    started = 0
    for e in reversed(events):
        if e.type == EventType.TURN_STARTED:
            started += 1
        elif e.type == EventType.TURN_PACED:
            started -= 1
        elif e.type in OUTCOME_EVENTS or e.type in (
            EventType.INPUT_RESOLVED,
            EventType.CONTEXT_COMPACTED,
            EventType.TURN_ACCEPTED,
        ):
            break
    return max(0, started - 1)


def tool_message(call: ToolCall, content: str, *, is_error: bool = False) -> Message:
    return Message(
        role=Role.TOOL, content=content, tool_call_id=call.id, name=call.name, is_error=is_error
    )


def idempotency_key(tenant_id: str, session_id: str, turn_id: str, step: int) -> str:
    """Deterministic across retries and recoveries, so a tool can dedupe its effect."""
    return f"{tenant_id}/{session_id}/{turn_id}/{step}"


def requests(events: Sequence[JournalEntry], step: int, kind: str) -> list[InputRequested]:
    """The step's input requests of one kind, oldest first."""
    asked = (
        InputRequested.from_json(e.data) for e in events if e.type == EventType.INPUT_REQUESTED
    )
    return [r for r in asked if r.step == step and r.kind == kind]


def answer(events: Sequence[JournalEntry], request_id: str) -> dict[str, Any] | None:
    """The recorded response to a request (``{"expired": true}`` when the scan settled
    it unanswered), or None while it is open."""
    for e in events:
        if e.type == EventType.INPUT_RESOLVED:
            resolved = InputResolved.from_json(e.data)
            if resolved.request_id == request_id:
                return resolved.response or {}
    return None


def answered(
    events: Sequence[JournalEntry], step: int, kind: str
) -> tuple[InputRequested, dict[str, Any]] | None:
    """The step's newest request of ``kind`` and its response, once it has one."""
    asked = requests(events, step, kind)
    if not asked:
        return None
    response = answer(events, asked[-1].request_id)
    return None if response is None else (asked[-1], response)


def _resolved_steps(events: Sequence[JournalEntry]) -> dict[int, int]:
    """Index in ``events`` of the newest ``input.resolved`` per step."""
    asked = (
        InputRequested.from_json(e.data) for e in events if e.type == EventType.INPUT_REQUESTED
    )
    step_of = {r.request_id if r.has("request_id") else None: r.step for r in asked}
    out: dict[int, int] = {}
    for i, e in enumerate(events):
        if e.type == EventType.INPUT_RESOLVED:
            resolved = InputResolved.from_json(e.data)
            step = step_of.get(resolved.request_id if resolved.has("request_id") else None)
            if isinstance(step, int):
                out[step] = i
    return out


def possibly_started(events: Sequence[JournalEntry], step: int) -> bool:
    """Whether an earlier attempt could have started the step's tool call.

    A call becomes runnable with the model message that asked for it, or with the
    newest answer to one of its requests (an approval, a reconciliation that said
    ``not_executed``, credentials). If an attempt other than the current one was
    live after that point, the call may have run (a crash hides whether it did).
    """
    starts = [i for i, e in enumerate(events) if e.type == EventType.TURN_STARTED]
    current = starts[-1] if starts else len(events)
    resolved = _resolved_steps(events).get(step)
    if resolved is not None:
        # written while the turn was parked: only attempts started after it count
        return any(resolved < s < current for s in starts)
    asked = [
        i
        for i, e in enumerate(events)
        if e.type == EventType.MODEL_COMPLETED
        and e.step is not None
        and e.step
        < step
        <= e.step + len(ModelCompleted.from_json(e.data).message.get("tool_calls") or ())
    ]
    # the attempt live when the model asked (it wrote the message), or one after it;
    # a rerun's reused message was written before any attempt (runtime/reruns.py)
    return bool(asked) and asked[-1] < current and any(s < current for s in starts)
