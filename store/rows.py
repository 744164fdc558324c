"""Rows into records, and JSON into parameters: what every concern of the store
shares between its statements and its callers."""

from __future__ import annotations

from dataclasses import fields
from datetime import datetime
from typing import Any

from turnkeep.runtime import jsonwire
from turnkeep.runtime.pending import TurnWait
from turnkeep.runtime.states import TurnState
from turnkeep.store.db import Row
from turnkeep.store.records import (
    Claimed,
    EventRecord,
    SessionRecord,
    TombstoneRecord,
    TurnRecord,
    WebhookRecord,
)

_TURN_FIELDS = tuple(f.name for f in fields(TurnRecord))
_EVENT_FIELDS = tuple(f.name for f in fields(EventRecord))
_WEBHOOK_FIELDS = tuple(f.name for f in fields(WebhookRecord))
_TOMBSTONE_FIELDS = tuple(f.name for f in fields(TombstoneRecord))


def jsonb(value: Any) -> str | None:
    """A JSON parameter as the statements take it (compact), None for None. Every
    statement casts it to jsonb, which keeps the value, not the text: written by the
    hot path's codec (runtime/jsonwire.py)."""
    return None if value is None else jsonwire.dumps(value)


def first(rows: list[Row]) -> Row | None:
    """A statement's first row, None for none (``fetchone``)."""
    return rows[0] if rows else None


def session_record(row: Row) -> SessionRecord:
    # a statement that names its columns may leave out the ones with defaults
    return SessionRecord(**{f.name: row[f.name] for f in fields(SessionRecord) if f.name in row})


def turn_record(row: Row, **changed: Any) -> TurnRecord:
    values = {name: row[name] for name in _TURN_FIELDS if name in row}
    values["state"] = TurnState(values["state"])
    if "pending_input" in values:
        # an empty object was never a wait (no writer leaves one): read as none
        pending = values["pending_input"]
        values["pending_input"] = TurnWait.from_json(pending) if pending else None
    return TurnRecord(**{**values, **changed})


def event_record(row: Row) -> EventRecord:
    return EventRecord(**{name: row[name] for name in _EVENT_FIELDS})


def event_from_row(tenant_id: str, session_id: str, row: list[Any]) -> EventRecord:
    """An event aggregated by the statement that read it (start_turn) as a positional
    JSON array: seq, turn_id, type, step, fence, data, created_at."""
    # filled as the frozen constructor would, without its per-field setattr: one per
    # row of the context window, on every turn
    seq, turn_id, type_, step, fence, data, created_at = row
    event = object.__new__(EventRecord)
    event.__dict__.update(
        tenant_id=tenant_id,
        session_id=session_id,
        seq=seq,
        turn_id=turn_id,
        type=type_,
        step=step,
        fence=fence,
        data=data,
        created_at=datetime.fromisoformat(created_at),
    )
    return event


def tombstone_record(row: Row) -> TombstoneRecord:
    return TombstoneRecord(**{name: row[name] for name in _TOMBSTONE_FIELDS})


def webhook_record(row: Row) -> WebhookRecord:
    return WebhookRecord(**{name: row[name] for name in _WEBHOOK_FIELDS})


def claimed_record(row: Row) -> Claimed:
    return Claimed(
        webhook=webhook_record(row),
        state=TurnState(row["state"]),
        result=row["result"],
        error=row["error"],
    )
