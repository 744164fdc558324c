"""The in-memory tables the named statements are answered over, and what the
statements share: rows shaped as Postgres returns them, JSON as ``jsonb`` keeps it,
the unique indexes that refuse, the lane order.

A row is a dict of its table's columns (store/schema.py), as psycopg's ``dict_row``
hands it out: ``jsonb`` columns decoded (objects with their keys in ``jsonb``'s
order), timestamps aware. Every statement of one call sees one ``now`` (``clock``),
as Postgres's ``now()`` is the transaction's start.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from psycopg.errors import DivisionByZero, NotNullViolation, UniqueViolation

from turnkeep.runtime.states import (
    ACTIVE_STATES,
    OUTCOME_EVENTS,
    PARKED_STATES,
    RUNNABLE_STATES,
    TRANSITIONS,
    TurnState,
)
from turnkeep.store.db import Row

Params = Mapping[str, Any]
#: one named statement answered in Python: its rows, as the SQL returns them
Statement = Callable[["Tables", Params], list[Row]]

#: the columns of an ``events`` row, in the table's order
EVENT_COLUMNS = ("tenant_id", "session_id", "seq", "turn_id", "type", "step", "fence", "data")
#: the columns of a ``turns`` row (``SELECT *``), for a row a LEFT JOIN leaves empty
TURN_COLUMNS = (
    "tenant_id",
    "session_id",
    "turn_id",
    "ordinal",
    "state",
    "agent_name",
    "agent_hash",
    "input_hash",
    "input",
    "output_schema",
    "budget",
    "attempt",
    "revision",
    "cancel_requested",
    "pending_input",
    "result",
    "error",
    "accepted_seq",
    "usage",
    "submitted_by",
    "created_at",
    "updated_at",
    "agent_version",
    "on_deploy",
    "upgrade_requested",
    "metadata",
    "project_id",
)
#: the earlier turns' events a turn starts with (start_turn's window) and the
#: transcript's (list_conversation), as their SQL spells them
CONVERSATION_TYPES = frozenset(
    {"turn.accepted", "model.completed", "tool.completed", "tool.interrupted"}
)


def refuse() -> DivisionByZero:
    """What a statement's own guard raises (``1 / 0``): the statement wrote nothing."""
    return DivisionByZero("division by zero")


def _key(k: str) -> tuple[int, bytes]:
    b = k.encode()
    return len(b), b


def canonical(value: Any) -> Any:
    """``value`` as ``jsonb`` gives it back: an object's keys shortest first, then
    bytewise (a reader that re-serialises sees Postgres's order)."""
    if isinstance(value, dict):
        return {k: canonical(value[k]) for k in sorted(value, key=_key)}
    if isinstance(value, list):
        return [canonical(v) for v in value]
    return value


def _numeric(text: str) -> Any:
    """A JSON number with a fraction or an exponent as ``jsonb`` keeps it: a
    ``numeric``, written back without an exponent (1e20 comes back an int, 2.50 a
    float), as psycopg then decodes it."""
    return json.loads(format(Decimal(text), "f"))


def jsonb(text: str | None) -> Any:
    """A ``CAST(:param AS jsonb)``: the JSON text decoded, None for NULL."""
    return None if text is None else canonical(json.loads(text, parse_float=_numeric))


def added_usage(total: Mapping[str, Any], step: Any) -> dict[str, Any]:
    """fenced_append's usage: each key of either added up as ``numeric`` (a key one
    lacks counts as 0), so 0.1 + 0.2 is 0.3 as in Postgres, not a float's sum.

    ``NotNullViolation`` when neither has a key: ``jsonb_object_agg`` over no keys is
    NULL, which the column refuses (the executor never sends an empty usage)."""
    if step is None:
        return dict(total)
    if not total and not step:
        raise NotNullViolation('null value in column "usage" violates not-null constraint')
    out: dict[str, Any] = {}
    for k in {*total, *step}:
        n = Decimal(str(total.get(k, 0))) + Decimal(str(step.get(k, 0)))
        out[k] = json.loads(str(n))  # numeric's text, decoded as psycopg decodes jsonb
    return {k: out[k] for k in sorted(out, key=_key)}


def context_size(data: Any) -> int:
    """What ``pg_column_size(data)`` weighs in the context window's byte bound,
    approximated by the JSON text's length (jsonb's binary form differs a little)."""
    return len(json.dumps(data, separators=(",", ":")).encode())


def resumable(turn: Row) -> bool:
    """A lane head a worker can step now (``{runnable}``, or ``{parked}`` with its
    request answered), as start_turn and fenced_append's lane_runnable read it."""
    state = TurnState(turn["state"])
    pending = turn["pending_input"]
    return state in RUNNABLE_STATES or (
        state in PARKED_STATES and isinstance(pending, dict) and "resolved" in pending
    )


def moves(state: str, to: str | TurnState) -> bool:
    """Whether ``state → to`` is a declared transition (``{transitions}``, ``{to:X}``)."""
    return TurnState(to) in TRANSITIONS[TurnState(state)]


@dataclass
class Tables:
    """The store's rows, keyed as their primary keys are."""

    sessions: dict[tuple[str, str], Row] = field(default_factory=dict)
    turns: dict[tuple[str, str, str], Row] = field(default_factory=dict)
    #: a session's journal by seq
    events: dict[tuple[str, str], dict[int, Row]] = field(default_factory=dict)
    webhooks: dict[tuple[str, str, str], Row] = field(default_factory=dict)
    tool_steps: dict[tuple[str, str, str, int, str], Row] = field(default_factory=dict)
    memories: dict[tuple[str, str, str], Row] = field(default_factory=dict)
    #: a model call's provider state, by its event's (tenant, session, seq)
    provider_state: dict[tuple[str, str, int], Row] = field(default_factory=dict)
    #: what stays of deleted sessions, by (tenant, session)
    tombstones: dict[tuple[str, str], Row] = field(default_factory=dict)
    #: the last ``turns.ordinal`` handed out (an identity: global admission order)
    ordinal: int = 0
    #: ``now()`` of the statement or transaction running
    clock: datetime = field(default_factory=lambda: datetime.now(UTC))

    # -- reads the statements share ----------------------------------------------

    def session(self, p: Params) -> Row | None:
        return self.sessions.get((p["tenant_id"], p["session_id"]))

    def turn(self, p: Params, turn_id: str | None = None) -> Row | None:
        return self.turns.get((p["tenant_id"], p["session_id"], turn_id or p["turn_id"]))

    def lane(self, tenant_id: str, session_id: str) -> list[Row]:
        """The session's active turns, oldest first (ix_turns_active_lane)."""
        active = {str(s) for s in ACTIVE_STATES}
        return sorted(
            (
                t
                for (tid, sid, _), t in self.turns.items()
                if (tid, sid) == (tenant_id, session_id) and t["state"] in active
            ),
            key=lambda t: int(t["ordinal"]),
        )

    def journal(self, tenant_id: str, session_id: str) -> list[Row]:
        """The session's events in seq order."""
        events = self.events.get((tenant_id, session_id), {})
        return [events[seq] for seq in sorted(events)]

    # -- writes -------------------------------------------------------------------

    def check_events(self, rows: Iterable[Row]) -> None:
        """The events' unique indexes, before any is written: the primary key (one
        event per seq) and ix_events_one_outcome_per_step (one outcome per step; a
        NULL step is distinct, as in a unique index). ``UniqueViolation``: the
        statement writes nothing."""
        rows = list(rows)
        outcomes = {str(t) for t in OUTCOME_EVENTS}
        for i, row in enumerate(rows):
            journal = self.events.get((row["tenant_id"], row["session_id"]), {})
            if row["seq"] in journal or any(r["seq"] == row["seq"] for r in rows[:i]):
                raise UniqueViolation(f'duplicate key value violates "pk_events": {row["seq"]}')
            if row["type"] not in outcomes or row["step"] is None:
                continue
            for other in (*journal.values(), *rows[:i]):
                if (
                    other["type"] in outcomes
                    and other["turn_id"] == row["turn_id"]
                    and other["step"] == row["step"]
                ):
                    raise UniqueViolation(
                        'duplicate key value violates "ix_events_one_outcome_per_step"'
                    )

    def event(
        self,
        p: Params,
        seq: int,
        turn_id: str,
        type: str,
        data: Any,
        *,
        step: int | None = None,
        fence: int = 0,
    ) -> Row:
        """An ``events`` row (not yet written: ``insert``)."""
        return {
            "tenant_id": p["tenant_id"],
            "session_id": p["session_id"],
            "seq": seq,
            "turn_id": turn_id,
            "type": type,
            "step": step,
            "fence": fence,
            "data": data,
            "created_at": self.clock,
        }

    def insert(self, rows: list[Row]) -> list[Row]:
        """Write events after ``check_events`` passed for them."""
        for row in rows:
            self.events.setdefault((row["tenant_id"], row["session_id"]), {})[row["seq"]] = row
        return rows

    def update(self, row: Row, **changed: Any) -> Row:
        """Change a row in place, ``updated_at`` with it (every statement sets it)."""
        row.update(changed, updated_at=self.clock)
        return row
