"""The reads of sessions, turns and the journal, pages included (the statements of
sql/reads.sql)."""

from __future__ import annotations

from datetime import datetime

from turnkeep.runtime.states import TurnState
from turnkeep.store.db import Row
from turnkeep.store.errors import CursorAhead, NotFound, ResyncRequired, SessionDeleted
from turnkeep.store.records import (
    EventPageRecord,
    EventRecord,
    SessionListing,
    SessionRecord,
    TombstoneRecord,
    TurnRecord,
)
from turnkeep.store.rows import event_record, session_record, tombstone_record, turn_record
from turnkeep.store.statements import Statements


class Reads(Statements):
    """Sessions, turns and events as a tenant sees them; ``NotFound`` for none."""

    def get_session(self, tenant_id: str, session_id: str) -> SessionRecord:
        row = self._one("get_session", {"tenant_id": tenant_id, "session_id": session_id})
        if row is None:
            raise NotFound("session not found")
        return session_record(row)

    def get_tombstone(self, tenant_id: str, session_id: str) -> TombstoneRecord | None:
        """What stays of the session if it was deleted (docs/erasure.md), else None."""
        row = self._one("get_tombstone", {"tenant_id": tenant_id, "session_id": session_id})
        return None if row is None else tombstone_record(row)

    def missing(self, tenant_id: str, session_id: str, what: str) -> NotFound | SessionDeleted:
        """What a read that found nothing answers (one more read, on a miss only):
        ``SessionDeleted`` for an erased session, else ``NotFound(what)``."""
        gone = self.get_tombstone(tenant_id, session_id)
        if gone is not None:
            return SessionDeleted(gone.deleted_at, gone.erased_at)
        return NotFound(what)

    def gone(self, tenant_id: str, session_id: str) -> SessionDeleted | None:
        """``SessionDeleted`` for a session deleted (its tombstone, or its row marked)
        or past its TTL; None for one that lives or never was. Two reads: a refusal's."""
        row = self._one("get_session", {"tenant_id": tenant_id, "session_id": session_id})
        if row is not None and row["deleted_at"] is None:
            expires = row["expires_at"]
            if expires is None or expires > datetime.now(expires.tzinfo):
                return None
            return SessionDeleted(expires)
        found = self.missing(tenant_id, session_id, "session not found")
        return found if isinstance(found, SessionDeleted) else None

    def waiting_on_session(self, tenant_id: str, session_id: str) -> list[tuple[str, str]]:
        """(session, turn) of the parents whose open delegation names a child in
        ``session_id``: what its deletion must tell (worker/waiters.py)."""
        rows = self._rows("waiting_on_session", {"tenant_id": tenant_id, "session_id": session_id})
        return [(str(r["session_id"]), str(r["turn_id"])) for r in rows]

    def _get_turn(self, tenant_id: str, session_id: str, turn_id: str) -> TurnRecord | None:
        row = self._one(
            "get_turn", {"tenant_id": tenant_id, "session_id": session_id, "turn_id": turn_id}
        )
        return None if row is None else turn_record(row)

    def get_turn(self, tenant_id: str, session_id: str, turn_id: str) -> TurnRecord:
        turn = self._get_turn(tenant_id, session_id, turn_id)
        if turn is None:
            raise NotFound("turn not found")
        return turn

    def list_turns(self, tenant_id: str, session_id: str) -> list[TurnRecord]:
        rows = self._rows("list_turns", {"tenant_id": tenant_id, "session_id": session_id})
        return [turn_record(r) for r in rows]

    def list_sessions(
        self,
        tenant_id: str,
        *,
        subject: str,
        limit: int,
        before: tuple[datetime, str] | None = None,
    ) -> list[SessionListing]:
        """At most ``limit`` of the tenant's sessions ``subject`` may see (those in no
        project, and those in its own projects), newest first, each with its lane head,
        in one read; ``before`` is the (created_at, session_id) of the last one of the
        previous page."""
        at, sid = before if before is not None else (None, "")
        rows = self._rows(
            "list_sessions",
            {
                "tenant_id": tenant_id,
                "subject": subject,
                "limit": limit,
                "before_at": at,
                "before_id": sid,
            },
        )
        return [
            SessionListing(
                session=session_record(r),
                active_turn=r["active_turn"],
                active_state=None if r["active_state"] is None else TurnState(r["active_state"]),
            )
            for r in rows
        ]

    def turn_page(
        self, tenant_id: str, session_id: str, *, limit: int, before: int | None = None
    ) -> list[TurnRecord]:
        """At most ``limit`` of the session's turns with an ordinal below ``before``,
        newest first; ``NotFound`` for no session."""
        rows = self._rows(
            "turn_page",
            {
                "tenant_id": tenant_id,
                "session_id": session_id,
                "limit": limit,
                "before": before if before is not None else 2**63 - 1,
            },
        )
        if not rows:
            raise NotFound("session not found")
        return [turn_record(r) for r in rows if r["turn_id"] is not None]

    def lane_head(self, tenant_id: str, session_id: str) -> TurnRecord | None:
        """The session's oldest active turn, the only one its lane may run."""
        row = self._one("lane_head", {"tenant_id": tenant_id, "session_id": session_id})
        return None if row is None else turn_record(row)

    def list_events(
        self, tenant_id: str, session_id: str, *, after: int, limit: int = 500
    ) -> tuple[list[EventRecord], int]:
        """Committed events with seq > ``after`` and the session's head seq, in one read
        (``event_page`` without the earliest seq); raises as it does."""
        page = self.event_page(tenant_id, session_id, after=after, limit=limit)
        return page.events, page.head_seq

    def event_page(
        self, tenant_id: str, session_id: str, *, after: int, limit: int = 500
    ) -> EventPageRecord:
        """At most ``limit`` committed events with seq > ``after``, with the session's
        head and earliest retained seq, in one read.

        ``CursorAhead`` when ``after`` is beyond the head; ``ResyncRequired`` when it is
        before the retention cut (``after + 1 < earliest_seq``); ``NotFound`` for no
        session.
        """
        return self._page("list_events", tenant_id, session_id, after=after, limit=limit)

    def conversation_page(
        self, tenant_id: str, session_id: str, *, after: int, limit: int
    ) -> EventPageRecord:
        """As ``event_page``, only the events the transcript is made of
        (``turnkeep.runtime.journal.CONVERSATION_EVENTS``)."""
        return self._page("list_conversation", tenant_id, session_id, after=after, limit=limit)

    def _page(
        self, name: str, tenant_id: str, session_id: str, *, after: int, limit: int
    ) -> EventPageRecord:
        rows = self._rows(
            name,
            {"tenant_id": tenant_id, "session_id": session_id, "after": after, "limit": limit},
        )
        if not rows:
            raise self.missing(tenant_id, session_id, "session not found")
        top = rows[0]
        if top["session_deleted_at"] is not None or top["session_expired"]:
            # deleted (its rows going) or past its TTL: gone, whatever is still there
            raise SessionDeleted(top["session_deleted_at"] or top["session_expires_at"])
        head, earliest = int(top["head_seq"]), int(top["earliest_seq"])
        if after > head:
            raise CursorAhead(after, head)
        if after + 1 < earliest:
            raise ResyncRequired(after, earliest, head)
        events = [event_record(r) for r in rows if r["seq"] is not None]
        return EventPageRecord(events=events, head_seq=head, earliest_seq=earliest)

    def turn_events(self, tenant_id: str, session_id: str, turn_id: str) -> list[EventRecord]:
        rows = self._rows(
            "turn_events", {"tenant_id": tenant_id, "session_id": session_id, "turn_id": turn_id}
        )
        return [event_record(r) for r in rows]

    def fence_floor(self, tenant_id: str, session_id: str) -> int:
        """The highest fence Postgres has accepted for the session (0 if none)."""
        try:
            return self.get_session(tenant_id, session_id).fence
        except NotFound:
            return 0

    def open_inputs(
        self,
        tenant_id: str,
        *,
        subject: str,
        after: tuple[str, int] = ("", 0),
        limit: int = 50,
    ) -> list[Row]:
        """The inbox's page (sql/reads.sql ``open_inputs``): turns parked on an open
        request, by session and admission after ``after``."""
        return self._rows(
            "open_inputs",
            {
                "tenant_id": tenant_id,
                "subject": subject,
                "after_sid": after[0],
                "after_ordinal": after[1],
                "limit": limit,
            },
        )
