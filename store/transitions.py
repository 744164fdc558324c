"""Named transitions and reads: the only code that runs the statements of queries.sql.

Each transition is one transaction; a fenced write that matches no row raises
``LeaseLost`` after rolling back, so a worker that lost its lease writes nothing.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import fields
from datetime import UTC, datetime
from typing import Any, TypeVar

from psycopg.errors import DivisionByZero
from sqlalchemy import Connection, Engine, RowMapping
from sqlalchemy.exc import DataError, IntegrityError

from runtime.states import EventType, TurnState
from store.db import make_engine, statement, transaction
from store.errors import (
    CursorAhead,
    IdempotencyConflict,
    InputNotOpen,
    LeaseLost,
    NotFound,
    OutcomeAlreadyRecorded,
    SessionAgentConflict,
    TurnNotActive,
)
from store.records import Admission, Appended, EventRecord, SessionRecord, TurnRecord
from store.sql import q

R = TypeVar("R", SessionRecord, TurnRecord, EventRecord)

#: keyset position of the recovery scan: (updated_at, tenant_id, session_id)
StalledCursor = tuple[datetime, str, str]


def _json(value: Any) -> str | None:
    return None if value is None else json.dumps(value, separators=(",", ":"))


def _record(cls: type[R], row: RowMapping, **converted: Any) -> R:
    """A frozen record from a row: every field by name, some converted first."""
    values = {f.name: row[f.name] for f in fields(cls)}
    return cls(**{**values, **converted})


def _session(row: RowMapping) -> SessionRecord:
    return _record(SessionRecord, row)


def _turn(row: RowMapping) -> TurnRecord:
    return _record(
        TurnRecord,
        row,
        state=TurnState(row["state"]),
        cancel_requested=bool(row["cancel_requested"]),
    )


def _event(row: RowMapping) -> EventRecord:
    return _record(EventRecord, row)


class Store:
    """Postgres access for one process. Thread-safe: every call takes a pooled connection."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    @classmethod
    def from_url(cls, url: str, *, pool_size: int = 10) -> Store:
        return cls(make_engine(url, pool_size=pool_size))

    def close(self) -> None:
        self.engine.dispose()

    # -- admission -------------------------------------------------------------

    def admit(
        self,
        *,
        tenant_id: str,
        session_id: str,
        turn_id: str,
        agent_name: str,
        agent_hash: str,
        input_hash: str,
        input: Mapping[str, Any],
        output_schema: Mapping[str, Any] | None,
        budget: Mapping[str, Any] | None,
    ) -> Admission:
        """Admit a turn in one transaction, idempotent by ``turn_id``.

        Same id and hash: the stored turn (``created=False``). Same id, other hash:
        ``IdempotencyConflict``. A session bound to another agent: ``SessionAgentConflict``.
        """
        with transaction(self.engine) as conn:
            row = (
                conn.execute(
                    q("admit_turn"),
                    {
                        "tenant_id": tenant_id,
                        "session_id": session_id,
                        "turn_id": turn_id,
                        "agent_name": agent_name,
                        "agent_hash": agent_hash,
                        "input_hash": input_hash,
                        "input": _json(dict(input)),
                        "output_schema": _json(output_schema),
                        "budget": _json(budget),
                        "event_data": _json({"input": dict(input), "agent": agent_name}),
                    },
                )
                .mappings()
                .one_or_none()
            )
            if row is not None:
                return Admission(turn=_turn(row), created=True)
            # not ours to write: undo the seq we may have taken, then explain why
            conn.rollback()
            existing = self._get_turn(conn, tenant_id, session_id, turn_id)
            if existing is None:
                raise SessionAgentConflict(
                    f"session {session_id!r} is bound to another agent than {agent_name!r}"
                )
            if existing.input_hash != input_hash:
                raise IdempotencyConflict(f"turn {turn_id!r} was admitted with another input")
            return Admission(turn=existing, created=False)

    # -- reads -----------------------------------------------------------------

    def get_session(self, tenant_id: str, session_id: str) -> SessionRecord:
        with statement(self.engine) as conn:
            row = (
                conn.execute(q("get_session"), {"tenant_id": tenant_id, "session_id": session_id})
                .mappings()
                .one_or_none()
            )
        if row is None:
            raise NotFound("session not found")
        return _session(row)

    def _get_turn(
        self, conn: Connection, tenant_id: str, session_id: str, turn_id: str
    ) -> TurnRecord | None:
        row = (
            conn.execute(
                q("get_turn"),
                {"tenant_id": tenant_id, "session_id": session_id, "turn_id": turn_id},
            )
            .mappings()
            .one_or_none()
        )
        return None if row is None else _turn(row)

    def get_turn(self, tenant_id: str, session_id: str, turn_id: str) -> TurnRecord:
        with statement(self.engine) as conn:
            turn = self._get_turn(conn, tenant_id, session_id, turn_id)
        if turn is None:
            raise NotFound("turn not found")
        return turn

    def list_turns(self, tenant_id: str, session_id: str) -> list[TurnRecord]:
        with statement(self.engine) as conn:
            rows = conn.execute(
                q("list_turns"), {"tenant_id": tenant_id, "session_id": session_id}
            ).mappings()
            return [_turn(r) for r in rows]

    def lane_head(self, tenant_id: str, session_id: str) -> TurnRecord | None:
        """The session's oldest active turn, the only one its lane may run."""
        with statement(self.engine) as conn:
            row = (
                conn.execute(q("lane_head"), {"tenant_id": tenant_id, "session_id": session_id})
                .mappings()
                .one_or_none()
            )
        return None if row is None else _turn(row)

    def list_events(
        self, tenant_id: str, session_id: str, *, after: int, limit: int = 500
    ) -> tuple[list[EventRecord], int]:
        """Committed events with seq > ``after`` and the session's head seq.

        ``CursorAhead`` when ``after`` is beyond the head; ``NotFound`` for no session.
        """
        with transaction(self.engine) as conn:
            row = (
                conn.execute(q("get_session"), {"tenant_id": tenant_id, "session_id": session_id})
                .mappings()
                .one_or_none()
            )
            if row is None:
                raise NotFound("session not found")
            head = int(row["head_seq"])
            if after > head:
                raise CursorAhead(after, head)
            rows = conn.execute(
                q("list_events"),
                {"tenant_id": tenant_id, "session_id": session_id, "after": after, "limit": limit},
            ).mappings()
            return [_event(r) for r in rows], head

    def turn_events(self, tenant_id: str, session_id: str, turn_id: str) -> list[EventRecord]:
        with statement(self.engine) as conn:
            rows = conn.execute(
                q("turn_events"),
                {"tenant_id": tenant_id, "session_id": session_id, "turn_id": turn_id},
            ).mappings()
            return [_event(r) for r in rows]

    def turn_context(
        self, tenant_id: str, session_id: str, turn_id: str, ordinal: int
    ) -> tuple[list[EventRecord], list[EventRecord]]:
        """(inputs and outcomes of the session's earlier turns, all events of this turn)."""
        with statement(self.engine) as conn:
            rows = conn.execute(
                q("turn_context"),
                {
                    "tenant_id": tenant_id,
                    "session_id": session_id,
                    "turn_id": turn_id,
                    "ordinal": ordinal,
                },
            ).mappings()
            events = [_event(r) for r in rows]
        prior = [e for e in events if e.turn_id != turn_id]
        return prior, [e for e in events if e.turn_id == turn_id]

    # -- the worker's fenced writes ----------------------------------------------

    def claim(self, tenant_id: str, session_id: str, fence: int) -> bool:
        """Accept ``fence`` only if it is above the stored one. False: lost the race."""
        with statement(self.engine) as conn:
            got = conn.execute(
                q("claim_fence"),
                {"tenant_id": tenant_id, "session_id": session_id, "fence": fence},
            ).scalar_one_or_none()
        return got is not None

    def fence_floor(self, tenant_id: str, session_id: str) -> int:
        """The highest fence Postgres has accepted for the session (0 if none)."""
        try:
            return self.get_session(tenant_id, session_id).fence
        except NotFound:
            return 0

    def append(
        self,
        *,
        tenant_id: str,
        session_id: str,
        turn_id: str,
        fence: int,
        revision: int,
        state: TurnState,
        type: EventType,
        data: Mapping[str, Any],
        step: int | None = None,
        attempt_inc: int = 0,
        result: Mapping[str, Any] | None = None,
        error: Mapping[str, Any] | None = None,
        pending_input: Mapping[str, Any] | None = None,
    ) -> Appended:
        """One checkpoint: a compare-and-swap commit guarded by fence and revision.

        ``LeaseLost`` when nothing matched (rolled back, no seq taken).
        """
        params = {
            "tenant_id": tenant_id,
            "session_id": session_id,
            "turn_id": turn_id,
            "fence": fence,
            "revision": revision,
            "state": state.value,
            "type": type.value,
            "step": step,
            "attempt_inc": attempt_inc,
            "data": _json(dict(data)),
            "result": _json(None if result is None else dict(result)),
            "error": _json(None if error is None else dict(error)),
            "pending_input": _json(None if pending_input is None else dict(pending_input)),
        }
        try:
            with statement(self.engine) as conn:
                row = conn.execute(q("fenced_append"), params).mappings().one_or_none()
        except IntegrityError as exc:
            raise OutcomeAlreadyRecorded(f"step {step} already has an outcome") from exc
        except DataError as exc:
            if not isinstance(exc.orig, DivisionByZero):
                raise
            # the statement's own guard: the session matched but the turn did not
            raise LeaseLost(f"revision {revision} is no longer current") from exc
        if row is None:
            raise LeaseLost(f"fence {fence} or revision {revision} is no longer current")
        return Appended(
            seq=row["seq"],
            revision=row["turn_revision"],
            attempt=row["turn_attempt"],
            cancel_requested=bool(row["turn_cancel_requested"]),
            event=_event(row),
        )

    # -- requests from people ----------------------------------------------------

    def request_cancel(
        self, tenant_id: str, session_id: str, turn_id: str, *, subject: str
    ) -> EventRecord | None:
        """Record a cancellation request. None when one was already recorded.

        ``NotFound`` for no such turn; ``TurnNotActive`` when it already ended.
        """
        with transaction(self.engine) as conn:
            row = (
                conn.execute(
                    q("request_cancel"),
                    {
                        "tenant_id": tenant_id,
                        "session_id": session_id,
                        "turn_id": turn_id,
                        "data": _json({"by": subject}),
                    },
                )
                .mappings()
                .one_or_none()
            )
            if row is not None:
                return _event(row)
            turn = self._get_turn(conn, tenant_id, session_id, turn_id)
        if turn is None:
            raise NotFound("turn not found")
        if turn.state.terminal:
            raise TurnNotActive(f"turn is {turn.state.value}")
        return None

    def resolve_input(
        self,
        tenant_id: str,
        session_id: str,
        turn_id: str,
        request_id: str,
        *,
        response: Mapping[str, Any],
        subject: str,
        expired: bool = False,
    ) -> EventRecord:
        """Answer a waiting turn's open input request, once.

        ``NotFound``: no such turn or request. ``InputNotOpen``: answered already, or
        expired (``expired=True`` is the recovery scan settling an expired request).
        """
        params = {
            "tenant_id": tenant_id,
            "session_id": session_id,
            "turn_id": turn_id,
            "request_id": request_id,
            "response": _json(dict(response)),
            "subject": subject,
            "expired": expired,
        }
        with transaction(self.engine) as conn:
            row = conn.execute(q("resolve_input"), params).mappings().one_or_none()
            if row is not None:
                return _event(row)
            turn = self._get_turn(conn, tenant_id, session_id, turn_id)
        pending = None if turn is None else turn.pending_input
        if turn is None or not pending or pending.get("request_id") != request_id:
            raise NotFound("input request not found")
        if pending.get("resolved"):
            raise InputNotOpen("the input request was already answered")
        raise InputNotOpen("the input request expired")

    def expired_inputs(self, *, limit: int) -> list[tuple[str, str, str, str]]:
        """(tenant, session, turn, request id) of waits whose request expired unanswered."""
        with statement(self.engine) as conn:
            rows = conn.execute(q("scan_expired_inputs"), {"limit": limit}).all()
        return [(r[0], r[1], r[2], r[3]) for r in rows]

    # -- recovery ----------------------------------------------------------------

    def stalled_sessions(
        self, *, grace: float, limit: int, after: StalledCursor | None = None
    ) -> tuple[list[tuple[str, str]], StalledCursor | None]:
        """Sessions whose lane head can run and whose journal has not moved in ``grace``,
        oldest first, one keyset page; the cursor for the next page (None at the end)."""
        ts, tenant, session = after or (datetime(1970, 1, 1, tzinfo=UTC), "", "")
        with statement(self.engine) as conn:
            rows = conn.execute(
                q("scan_stalled"),
                {
                    "grace": grace,
                    "limit": limit,
                    "after_ts": ts,
                    "after_tenant": tenant,
                    "after_session": session,
                },
            ).all()
        page = [(r[0], r[1]) for r in rows]
        cursor = (rows[-1][2], rows[-1][0], rows[-1][1]) if len(rows) == limit else None
        return page, cursor
