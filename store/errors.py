"""Errors of the store: the ``StoreError`` branch of the one tree
(runtime/errors.py). Each class says when it is raised and carries its ``code`` and
the HTTP ``status`` every edge answers it with (a ``public`` text where the message
may name ids: a client never sees one).

A fenced write that matched no row raises ``LeaseLost``, a control-flow signal with
its own root (``turnkeep.runtime.signals``), apart from these errors, which a client may see.

Three statements refuse in SQL: they divide by zero to abort themselves, so they
write nothing (their seq included). ``refusal`` is the one place that says what each
one's refusal means (``REFUSALS``, one ``Refused`` class per statement); the store
catches those and answers its caller, who never sees them.
"""

from __future__ import annotations

from datetime import datetime
from typing import ClassVar

from psycopg.errors import DivisionByZero

from turnkeep.runtime.errors import TurnkeepError
from turnkeep.runtime.signals import LeaseLost

__all__ = [
    "CreatorRevoked",
    "CursorAhead",
    "IdempotencyConflict",
    "InputExpired",
    "InputForbidden",
    "InputNotOpen",
    "LaneHeadMoved",
    "LeaseLost",
    "NotFound",
    "OutcomeAlreadyRecorded",
    "QuotaExceeded",
    "Refused",
    "ResyncRequired",
    "RevisionMoved",
    "SessionAgentConflict",
    "SessionBusy",
    "SessionDeleted",
    "StoreError",
    "TurnIdTaken",
    "TurnNotActive",
    "Unavailable",
    "refusal",
]


class StoreError(TurnkeepError):
    """Root of every error the store raises on purpose (left at 500: not a client's
    business, answered as ``internal``)."""

    code = "store_error"
    title: ClassVar[str | None] = None


class NotFound(StoreError):
    """Raised when a session or turn does not exist for the caller's tenant."""

    code = "not_found"
    status = 404
    title = "Not found"


class IdempotencyConflict(StoreError):
    """Raised when a turn id is reused with an input whose hash differs from the stored one."""

    code = "idempotency_conflict"
    status = 409
    title = "Idempotency key reused with another request"
    public = "this Idempotency-Key was already used with another request"


class SessionAgentConflict(StoreError):
    """Raised when a turn names another agent than the one its session is bound to."""

    code = "session_agent_conflict"
    status = 409
    title = "Session is bound to another agent"
    public = "the session is bound to another agent"


class SessionMetadataConflict(StoreError):
    """Raised when a turn names ``session_metadata`` other than its session's (set by the
    session's first turn, never changed): nothing is admitted."""

    code = "session_metadata_conflict"
    status = 409
    title = "Session has other metadata"
    public = "the session was created with other session_metadata"


class SessionBusy(StoreError):
    """Raised when a turn is admitted with ``multitask=reject`` while the session has an
    active turn (a replay of an admitted turn is never refused)."""

    code = "session_busy"
    status = 409
    title = "Session has an active turn"
    public = "the session has an active turn (multitask=reject)"


class SessionDeleted(StoreError):
    """Raised when a request reaches a session that was deleted or expired (its
    tombstone, docs/erasure.md): every read, an admission (a replayed Idempotency-Key
    too: it never re-creates the session), a cancellation, an answer, a fork. Another
    tenant's deleted session is answered as a missing one (``NotFound``)."""

    code = "session_deleted"
    status = 410
    title = "Session was deleted"
    public = "the session was deleted"

    def __init__(self, deleted_at: datetime | None = None, erased_at: datetime | None = None):
        super().__init__("the session was deleted")
        self.deleted_at = deleted_at
        self.erased_at = erased_at

    def fields(self) -> dict[str, object]:
        # when, and whether its erasure has finished; never who, nor any id
        return {
            "deleted_at": None if self.deleted_at is None else self.deleted_at.isoformat(),
            "erased_at": None if self.erased_at is None else self.erased_at.isoformat(),
        }


class CreatorRevoked(StoreError):
    """Raised when a schedule's tick would be admitted as its creator, and no token of
    the creator's tenant stands for it any more, or only a ``reader``'s
    (store/admission.py): nothing was written, and the schedule is paused with this
    code as its reason (recovery/schedules.py)."""

    code = "creator_revoked"
    status = 403
    title = "The schedule's creator may no longer write"
    public = "the schedule's creator may no longer write"


class QuotaExceeded(StoreError):
    """Raised when a new turn would pass a bound on active turns (``scope``: ``session``
    or ``tenant``), or a stream the tenant's bound on open streams (``streams``): nothing
    was written. A replay of an admitted turn is never refused."""

    code = "quota_exceeded"
    status = 429
    title = "Quota exceeded"
    #: seconds a client waits before it tries again (active turns end, streams close)
    retry_after = 5

    def __init__(self, scope: str, limit: int) -> None:
        super().__init__(f"the {scope} quota of {limit} is reached")
        self.scope = scope
        self.limit = limit

    def fields(self) -> dict[str, object]:
        # the scope and the bound only: never the tenant's or the session's ids
        return {"quota": self.scope, "limit": self.limit}

    def headers(self) -> dict[str, str]:
        return {"Retry-After": str(self.retry_after)}


class CursorAhead(StoreError):
    """Raised when an event cursor is beyond the session's head seq."""

    code = "cursor_ahead"
    status = 409
    title = "Cursor is beyond the session's head"

    def __init__(self, cursor: int, head: int) -> None:
        super().__init__(f"cursor {cursor} is beyond the head seq {head}")
        self.cursor = cursor
        self.head = head

    def detail(self) -> str:
        return f"cursor {self.cursor} is beyond the head seq"

    def fields(self) -> dict[str, object]:
        return {"cursor": self.cursor, "head_seq": self.head}


class ResyncRequired(StoreError):
    """Raised when an event cursor is before the session's earliest retained seq
    (``cursor + 1 < earliest``): the events in between were pruned, so the reader
    must rebuild its state and follow on from ``earliest - 1``."""

    code = "resync_required"
    status = 410
    title = "Cursor is before the earliest retained event"

    def __init__(self, requested: int, earliest: int, latest: int) -> None:
        super().__init__(f"cursor {requested} is before the earliest retained seq {earliest}")
        self.requested = requested
        self.earliest = earliest
        self.latest = latest

    def fields(self) -> dict[str, object]:
        # rebuild state (turns, /messages), then follow on from earliest - 1
        return {"requested": self.requested, "earliest": self.earliest, "latest": self.latest}


class TurnNotActive(StoreError):
    """Raised when a request needs an active turn (cancel) but the turn is terminal."""

    code = "turn_not_active"
    status = 409
    title = "Turn is not active"
    public = "the turn has already ended"


class InputNotOpen(StoreError):
    """Raised when an input request is answered after it was answered or expired."""

    code = "input_not_open"
    status = 409
    title = "Input request is not open"


class InputExpired(StoreError):
    """Raised when an input request is answered after its expiry."""

    code = "input_expired"
    status = 410
    public = "the input request expired unanswered"


class InputForbidden(StoreError):
    """Raised when someone the request is not bound to answers it (another subject than
    the turn's starter, a lower role, or a reader)."""

    code = "input_forbidden"
    status = 403
    public = "this principal may not answer the request"


class Unavailable(StoreError):
    """Raised when Postgres or Redis cannot be reached; nothing was written."""

    code = "unavailable"
    status = 503
    title = "Service unavailable"
    public = "the database is unavailable"
    #: seconds a client waits before it tries again
    retry_after = 1

    def headers(self) -> dict[str, str]:
        return {"Retry-After": str(self.retry_after)}


class OutcomeAlreadyRecorded(StoreError):
    """Raised when a step's outcome is already in the journal (the unique index said so)."""

    code = "outcome_already_recorded"


class Refused(StoreError):
    """Raised when a statement's own SQL guard refused it (it divided by zero, so it
    wrote nothing). Each refusing statement has its subclass, which says what the
    refusal means; the store catches them, its callers never see one."""

    code = "refused"
    #: the statement whose refusal this is
    statement = ""


class TurnIdTaken(Refused):
    """Raised when ``admit_turn`` refuses: the turn id is taken, or the session is
    bound to another agent or another project (no session row comes back, hence no
    turn); the seq is given back. The caller reads the stored turn to tell which."""

    statement = "admit_turn"


class RerunIdTaken(Refused):
    """Raised when ``admit_rerun`` refuses: the turn id is taken, or the session is
    another agent's; nothing is written. The caller reads the stored turn."""

    statement = "admit_rerun"


class LaneHeadMoved(Refused):
    """Raised when ``start_turn`` refuses: the lane head moved under the statement (an
    answer, a cancellation); the caller reads the lane again."""

    statement = "start_turn"


class RevisionMoved(Refused):
    """Raised when ``fenced_append`` refuses: the session matched the fence but the
    turn no longer has the revision; the caller has lost its turn (``LeaseLost``)."""

    statement = "fenced_append"


#: what each statement's refusal in SQL means, by the statement's name
REFUSALS: dict[str, type[Refused]] = {
    kind.statement: kind for kind in (TurnIdTaken, RerunIdTaken, LaneHeadMoved, RevisionMoved)
}


def refusal(statement: str, exc: DivisionByZero) -> Refused:
    """The named reason ``statement`` refused, for its caller to raise ``from exc``.

    A statement not in ``REFUSALS`` never divides by zero on purpose: ``exc`` is
    raised again as it is (a bug, not a refusal)."""
    kind = REFUSALS.get(statement)
    if kind is None:
        raise exc
    return kind(f"{statement} refused")
