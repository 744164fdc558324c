"""Forks in the store: what a fork refuses, and the error its cut turns carry.

A fork is one transaction (``Store.fork``): lock the source session's row
(``fork_source``, FOR SHARE: the source's writers wait, its journal holds still),
then insert the new session (``fork_session``), copies of the source's turns
admitted at or before the fork's seq (``fork_turns``) and its retained events up to
that seq, same seq numbers and turn ids (``fork_events``). Nothing of it is visible
before the commit, so a crash leaves nothing behind. The statements are in
sql/forks.sql. docs/fork-and-attachments.md.
"""

from __future__ import annotations

from turnkeep.store.errors import IdempotencyConflict, NotFound, SessionDeleted, StoreError
from turnkeep.store.records import Forked
from turnkeep.store.rows import first, jsonb, session_record
from turnkeep.store.statements import Statements, tenant_of

#: the error code of a turn that was active at the fork's seq: its copy is cancelled,
#: never run (a persisted name: pinned in a test)
FORK_CUT = "fork_cut"


class ForkPointPruned(StoreError):
    """Raised when a fork's seq is before the source's earliest retained seq: the
    events up to it are gone (the journal prune)."""

    code = "fork_point_pruned"
    status = 410

    def __init__(self, requested: int, earliest: int, latest: int) -> None:
        super().__init__(f"seq {requested} is before the earliest retained seq {earliest}")
        self.requested = requested
        self.earliest = earliest
        self.latest = latest

    def fields(self) -> dict[str, object]:
        return {"requested": self.requested, "earliest": self.earliest, "latest": self.latest}


class ForkPointAhead(StoreError):
    """Raised when a fork's seq is beyond the source's head seq."""

    code = "fork_point_ahead"
    status = 409

    def __init__(self, requested: int, head: int) -> None:
        super().__init__(f"seq {requested} is beyond the head seq {head}")
        self.requested = requested
        self.head = head

    def detail(self) -> str:
        return f"seq {self.requested} is beyond the head seq"

    def fields(self) -> dict[str, object]:
        return {"requested": self.requested, "head_seq": self.head}


class SessionExists(StoreError):
    """Raised when a fork names a new session id that an ordinary session (not a
    fork) already has."""

    code = "session_exists"
    status = 409
    public = "a session of that id exists and is not this fork"


class Forks(Statements):
    """Forks of a session (POST /v1/sessions/{sid}/fork)."""

    def fork(
        self,
        tenant_id: str,
        source_id: str,
        session_id: str,
        *,
        at_seq: int,
        default_ttl: float | None = None,
    ) -> Forked:
        """Fork ``source_id`` at ``at_seq`` into the new session ``session_id``: one
        transaction (``fork_source``, ``fork_session``, ``fork_turns``, ``fork_events``),
        so nothing of a fork is visible before it is whole. The source is only read.

        Idempotent by ``session_id``: a fork of that id from the same source and seq is
        answered as it stands (``created=False``), whatever the source did since.
        The fork keeps the source's TTL, else gets ``default_ttl`` (the tenant's).
        Another fork of that id: ``IdempotencyConflict``; a session of that id that is
        no fork: ``SessionExists``. No source: ``NotFound``. A seq before the source's
        earliest retained one: ``ForkPointPruned``; beyond its head: ``ForkPointAhead``.
        """
        message = f"the session was forked at seq {at_seq} while this turn was active"
        params = {
            "tenant_id": tenant_id,
            "source_id": source_id,
            "session_id": session_id,
            "at_seq": at_seq,
            "cut_error": jsonb({"code": FORK_CUT, "message": message}),
            "default_ttl": default_ttl,
        }
        with self.connector.transaction(tenant_of(params)) as tx:
            src = first(tx.rows("fork_source", params))
            if src is None:
                raise self._missing(tenant_id, source_id)
            if src["src_gone"] or src["dst_gone"]:
                gone = self._missing(tenant_id, session_id if src["dst_gone"] else source_id)
                raise gone if isinstance(gone, SessionDeleted) else SessionDeleted()
            if src["fork_id"] is None:
                head, earliest = int(src["head_seq"]), int(src["earliest_seq"])
                if at_seq < earliest:
                    raise ForkPointPruned(at_seq, earliest, head)
                if at_seq > head:
                    raise ForkPointAhead(at_seq, head)
                row = first(tx.rows("fork_session", params))
                if row is not None:
                    turns = first(tx.rows("fork_turns", params))
                    tx.rows("fork_events", params)
                    cut = tuple(turns["cut_turns"] or ()) if turns is not None else ()
                    return Forked(session_record(row), source_id, at_seq, created=True, cut=cut)
        # the id is taken (before, or by a concurrent fork just now): a replay or not
        return self._forked(tenant_id, source_id, session_id, at_seq)

    def _forked(self, tenant_id: str, source_id: str, session_id: str, at_seq: int) -> Forked:
        row = self._one("get_session", {"tenant_id": tenant_id, "session_id": session_id})
        if row is None:  # a rolled-back race, or a session erased since
            raise self._missing(tenant_id, session_id)
        if row["forked_from_session"] is None:
            raise SessionExists(f"session {session_id!r} exists and is not a fork")
        if (row["forked_from_session"], row["forked_from_seq"]) != (source_id, at_seq):
            raise IdempotencyConflict(f"session {session_id!r} is another fork")
        return Forked(session_record(row), source_id, at_seq, created=False)

    def _missing(self, tenant_id: str, session_id: str) -> NotFound | SessionDeleted:
        """No session row: an erased session (its tombstone) or none at all."""
        params = {"tenant_id": tenant_id, "session_id": session_id}
        found = self._one("get_tombstone", params)
        if found is None:
            return NotFound("session not found")
        return SessionDeleted(found["deleted_at"], found["erased_at"])

    def forked_from(self, tenant_id: str, session_id: str) -> tuple[str, int] | None:
        """The source session and seq of a fork, None for a session that is no fork;
        ``NotFound`` for no session."""
        row = self._one("get_session", {"tenant_id": tenant_id, "session_id": session_id})
        if row is None:
            raise NotFound("session not found")
        if row["forked_from_session"] is None:
            return None
        return str(row["forked_from_session"]), int(row["forked_from_seq"])
