"""Named transitions and reads: the only code that runs the statements of queries.sql.

Every transition is one statement in autocommit, so one round trip and one
server transaction (only an admission that looks at the lane, ``multitask`` reject
or interrupt, runs a short transaction of up to three, one more with a workflow
node's webhook: ``Store._admit_locked``); a
fenced write that matches no row raises ``LeaseLost`` and has written nothing, so a
worker that lost its lease writes nothing. The SQL refuses a
transition ``runtime/states.TRANSITIONS`` does not declare (store/sql.py renders
the guards from it), whatever the caller believes.

Every statement runs as its ``tenant_id`` (store/db.py sets the session's tenant the
row-level security policies read, store/schema.py): a statement that lost its tenant
clause would still see that tenant's rows only. The ``CROSS_TENANT`` scans alone run
as every tenant.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import fields
from datetime import UTC, datetime
from typing import Any, TypeVar

from psycopg import errors as pg

from runtime.hashing import sha256_hex
from runtime.multitask import Multitask
from runtime.states import TERMINAL_STATES, EventType, TurnState
from store.attachments import AttachmentNotReady, AttachmentState
from store.db import ALL_TENANTS, Database, Row
from store.errors import (
    CursorAhead,
    IdempotencyConflict,
    InputNotOpen,
    LeaseLost,
    NotFound,
    OutcomeAlreadyRecorded,
    QuotaExceeded,
    ResyncRequired,
    SessionAgentConflict,
    SessionBusy,
    TurnNotActive,
)
from store.forks import FORK_CUT, ForkPointAhead, ForkPointPruned, SessionExists
from store.records import (
    Admission,
    Appended,
    AttachmentRecord,
    Claimed,
    EventPage,
    EventRecord,
    Forked,
    MemoryRecord,
    ProjectRecord,
    Pruned,
    SessionListing,
    SessionRecord,
    Started,
    ToolStepRecord,
    TurnRecord,
    WebhookRecord,
    WebhookSpec,
)
from store.sql import q

R = TypeVar("R", SessionRecord, TurnRecord, EventRecord)

#: keyset position of the recovery scan: (updated_at, tenant_id, session_id)
StalledCursor = tuple[datetime, str, str]
#: keyset position of the journal prune's walk over sessions: (tenant_id, session_id)
SessionCursor = tuple[str, str]
#: keyset position of the webhook delivery pass: (next_attempt_at, tenant, session, turn)
WebhookCursor = tuple[datetime, str, str, str]

#: the statements that run across tenants, with no ``:tenant_id``: the recovery scans
#: (stalled lanes, expired inputs), the journal retention's work list and the webhook
#: delivery pass. Only these run with the row-level security setting ``*``
#: (store/db.py ALL_TENANTS); every other statement runs as its ``tenant_id``.
CROSS_TENANT = frozenset(
    {
        "scan_stalled",
        "scan_expired_inputs",
        "retention_candidates",
        "claim_webhooks",
        # the backlog gauges of /metrics (store/producer.py Backlog)
        "count_active_turns",
        # delegations whose children all ended, for the recovery scan to answer
        "scan_delegations",
    }
) | {"sweep_attachments"}  # the sweep of attachments left pending or deleting

#: start_turn runs again this often when the lane head moved under it
START_RACE_TRIES = 5
#: the earlier turns' conversation a turn starts with, newest kept: at most this many
#: rows and (stored) bytes after the newest compaction
CONTEXT_WINDOW_ROWS = 2000
#: seconds after its turn ended that the prune deletes a recorded tool step (settings:
#: TURNKEEP_TOOL_STEPS_GRACE)
TOOL_STEPS_GRACE = 86_400.0
CONTEXT_WINDOW_BYTES = 4 << 20

_TURN_FIELDS = tuple(f.name for f in fields(TurnRecord))
_EVENT_FIELDS = tuple(f.name for f in fields(EventRecord))


def _json(value: Any) -> str | None:
    return None if value is None else json.dumps(value, separators=(",", ":"))


def _session(row: Row) -> SessionRecord:
    # a statement that names its columns may leave out the ones with defaults
    return SessionRecord(**{f.name: row[f.name] for f in fields(SessionRecord) if f.name in row})


def _turn(row: Row, **changed: Any) -> TurnRecord:
    values = {name: row[name] for name in _TURN_FIELDS if name in row}
    values["state"] = TurnState(values["state"])
    return TurnRecord(**{**values, **changed})


def _event(row: Row) -> EventRecord:
    return EventRecord(**{name: row[name] for name in _EVENT_FIELDS})


_WEBHOOK_FIELDS = tuple(f.name for f in fields(WebhookRecord))


def _webhook(row: Row) -> WebhookRecord:
    return WebhookRecord(**{name: row[name] for name in _WEBHOOK_FIELDS})


def _claimed(row: Row) -> Claimed:
    return Claimed(
        webhook=_webhook(row),
        state=TurnState(row["state"]),
        result=row["result"],
        error=row["error"],
    )


def _refused(row: Row, params: Mapping[str, Any]) -> None:
    """Raise what ``admit_turn``'s row says refused a new turn id (nothing written):
    ``SessionBusy`` under ``reject``, else ``QuotaExceeded``."""
    if row["busy"]:
        raise SessionBusy("the session has an active turn")
    if row["session_full"]:
        raise QuotaExceeded("session", int(params["max_session"]))
    if row["tenant_full"]:
        raise QuotaExceeded("tenant", int(params["max_tenant"]))


def _tenant(params: Mapping[str, Any]) -> str:
    """The tenant a statement runs as: its ``tenant_id``, which is never ``*``."""
    tenant = params["tenant_id"]
    if not isinstance(tenant, str) or not tenant or tenant == ALL_TENANTS:
        raise ValueError(f"not a tenant id: {tenant!r}")
    return tenant


def _event_from_json(obj: dict[str, Any]) -> EventRecord:
    """An event aggregated as JSON by the statement that read it (start_turn)."""
    return EventRecord(
        tenant_id=obj["tenant_id"],
        session_id=obj["session_id"],
        seq=obj["seq"],
        turn_id=obj["turn_id"],
        type=obj["type"],
        step=obj["step"],
        fence=obj["fence"],
        data=obj["data"],
        created_at=datetime.fromisoformat(obj["created_at"]),
    )


class Store:
    """Postgres access for one process. Thread-safe: every call takes a pooled
    connection for one statement (or one short transaction)."""

    def __init__(
        self,
        db: Database,
        *,
        window_rows: int = CONTEXT_WINDOW_ROWS,
        window_bytes: int = CONTEXT_WINDOW_BYTES,
    ) -> None:
        self.db = db
        #: bounds of the earlier turns' conversation start_turn returns
        self.window_rows = window_rows
        self.window_bytes = window_bytes

    @classmethod
    def from_url(cls, url: str, *, pool_size: int = 10, **window: int) -> Store:
        return cls(Database(url, size=pool_size), **window)

    def close(self) -> None:
        self.db.close()

    def _rows(self, name: str, params: Mapping[str, Any]) -> list[Row]:
        """The one way a statement runs outside ``_admit_locked``: by name, in autocommit,
        as its ``tenant_id`` sees the tables (a ``CROSS_TENANT`` scan: every tenant)."""
        tenant = ALL_TENANTS if name in CROSS_TENANT else _tenant(params)
        return self.db.rows(q(name), params, tenant=tenant)

    def _one(self, name: str, params: Mapping[str, Any]) -> Row | None:
        rows = self._rows(name, params)
        return rows[0] if rows else None

    def ping(self) -> None:
        """One round trip; ``Unavailable`` when Postgres does not answer."""
        self.db.rows("SELECT 1", {})

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
        submitted_by: str = "",
        multitask: Multitask = Multitask.ENQUEUE,
        webhook: WebhookSpec | None = None,
        max_queued_session: int | None = None,
        max_queued_tenant: int | None = None,
        project_id: str | None = None,
    ) -> Admission:
        """Admit a turn, idempotent by ``turn_id``: one statement for ``enqueue``; for
        ``reject`` and ``interrupt`` one short transaction that locks the session first
        (see ``_admit_locked``). A ``webhook`` (a workflow node's) is written in the
        same transaction as the turn (``insert_webhook``), or not at all; a replay
        writes none (the stored one, if any, stays).

        Same id and hash: the stored turn (``created=False``), whatever ``multitask``
        says: a replay is never refused as busy and interrupts nothing. Same id, other
        hash: ``IdempotencyConflict``. A session bound to another agent:
        ``SessionAgentConflict``. ``reject`` while the session has an active turn:
        ``SessionBusy`` (nothing written).

        Quotas (None: none): a new turn id while the session has ``max_queued_session``
        active turns, or the tenant ``max_queued_tenant``, is ``QuotaExceeded``
        (nothing written); a replay is never refused. ``interrupt`` is not bound by the
        session's quota: it cancels every earlier turn, so the lane cannot pile up.
        Admissions racing each other may overshoot a bound by as many as race (the
        counts see the statement's snapshot, see ``admit_turn``).

        ``project_id``: the project a new session is created in; a session that exists
        in another project (or none, or in one when this is None) is refused as
        another agent's is (``SessionAgentConflict``: api/submit.py tells which).
        """
        params = {
            "tenant_id": tenant_id,
            "session_id": session_id,
            "turn_id": turn_id,
            "agent_name": agent_name,
            "agent_hash": agent_hash,
            "input_hash": input_hash,
            "input": _json(dict(input)),
            "output_schema": _json(output_schema),
            "budget": _json(budget),
            "submitted_by": submitted_by,
            "reject": multitask is Multitask.REJECT,
            "max_session": None if multitask is Multitask.INTERRUPT else max_queued_session,
            "max_tenant": max_queued_tenant,
            "project_id": project_id,
        }
        interrupted: tuple[EventRecord, ...] = ()
        try:
            if multitask is Multitask.ENQUEUE and webhook is None:
                row = self._one("admit_turn", params)
                if row is not None:
                    _refused(row, params)
            else:
                row, interrupted = self._admit_locked(
                    params,
                    lock=multitask is not Multitask.ENQUEUE,
                    interrupt=multitask is Multitask.INTERRUPT,
                    webhook=webhook,
                )
        except pg.DivisionByZero:
            row = None  # the turn id exists: the statement gave its seq back
        if row is not None:
            turn = _turn(row)
            event = EventRecord(
                tenant_id=tenant_id,
                session_id=session_id,
                seq=turn.accepted_seq,
                turn_id=turn_id,
                type=EventType.TURN_ACCEPTED.value,
                step=None,
                fence=0,
                data=row["event_data"],
                created_at=row["event_created_at"],
            )
            return Admission(turn=turn, created=True, event=event, interrupted=interrupted)
        existing = self._get_turn(tenant_id, session_id, turn_id)
        if existing is None:
            raise SessionAgentConflict(
                f"session {session_id!r} is bound to another agent than {agent_name!r}"
            )
        if existing.input_hash != input_hash:
            raise IdempotencyConflict(f"turn {turn_id!r} was admitted with another input")
        return Admission(turn=existing, created=False)

    def _admit_locked(
        self,
        params: dict[str, Any],
        *,
        interrupt: bool,
        lock: bool = True,
        webhook: WebhookSpec | None = None,
    ) -> tuple[Row | None, tuple[EventRecord, ...]]:
        """``reject`` and ``interrupt``: lock the session row (``lock_session``), admit
        (``admit_turn``), and for ``interrupt`` cancel every earlier active turn
        (``interrupt_lane``), in one transaction; with a ``webhook``, write it
        (``insert_webhook``) in that transaction too (``lock=False``: an ``enqueue``
        admission, which needs no lock). A single statement could not do it:
        its snapshot is taken when it starts, before it waits for the session row, so it
        would miss a turn a concurrent admission committed meanwhile; after the lock,
        each statement's snapshot holds every turn committed before.

        A replay aborts ``admit_turn`` (``DivisionByZero``, raised), so the whole
        transaction rolls back and nothing is cancelled; a busy lane under ``reject``
        raises ``SessionBusy`` and a quota reached ``QuotaExceeded``, rolling back too.
        Another agent's session aborts ``admit_turn`` as a replay does.
        """
        with self.db.transaction(_tenant(params)) as conn:
            if lock:
                conn.execute(q("lock_session"), params)
            row = conn.execute(q("admit_turn"), params).fetchone()
            if row is None:
                return None, ()
            _refused(row, params)
            if webhook is not None:
                conn.execute(
                    q("insert_webhook"),
                    {
                        "tenant_id": params["tenant_id"],
                        "session_id": params["session_id"],
                        "turn_id": params["turn_id"],
                        "run_id": webhook.run_id,
                        "node_id": webhook.node_id,
                        "url": webhook.url,
                        "secret_id": webhook.secret_id,
                        "delivery_id": webhook.delivery_id,
                    },
                )
            if not interrupt:
                return row, ()
            data = {
                "by": params["submitted_by"],
                "reason": "interrupted",
                "by_turn": row["turn_id"],
            }
            rows = conn.execute(
                q("interrupt_lane"), {**params, "ordinal": row["ordinal"], "data": _json(data)}
            ).fetchall()
        return row, tuple(sorted((_event(r) for r in rows), key=lambda e: e.seq))

    # -- reads -----------------------------------------------------------------

    def get_session(self, tenant_id: str, session_id: str) -> SessionRecord:
        row = self._one("get_session", {"tenant_id": tenant_id, "session_id": session_id})
        if row is None:
            raise NotFound("session not found")
        return _session(row)

    def _get_turn(self, tenant_id: str, session_id: str, turn_id: str) -> TurnRecord | None:
        row = self._one(
            "get_turn", {"tenant_id": tenant_id, "session_id": session_id, "turn_id": turn_id}
        )
        return None if row is None else _turn(row)

    def get_turn(self, tenant_id: str, session_id: str, turn_id: str) -> TurnRecord:
        turn = self._get_turn(tenant_id, session_id, turn_id)
        if turn is None:
            raise NotFound("turn not found")
        return turn

    def list_turns(self, tenant_id: str, session_id: str) -> list[TurnRecord]:
        rows = self._rows("list_turns", {"tenant_id": tenant_id, "session_id": session_id})
        return [_turn(r) for r in rows]

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
                session=_session(r),
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
        return [_turn(r) for r in rows if r["turn_id"] is not None]

    def lane_head(self, tenant_id: str, session_id: str) -> TurnRecord | None:
        """The session's oldest active turn, the only one its lane may run."""
        row = self._one("lane_head", {"tenant_id": tenant_id, "session_id": session_id})
        return None if row is None else _turn(row)

    def list_events(
        self, tenant_id: str, session_id: str, *, after: int, limit: int = 500
    ) -> tuple[list[EventRecord], int]:
        """Committed events with seq > ``after`` and the session's head seq, in one read
        (``event_page`` without the earliest seq); raises as it does."""
        page = self.event_page(tenant_id, session_id, after=after, limit=limit)
        return page.events, page.head_seq

    def event_page(
        self, tenant_id: str, session_id: str, *, after: int, limit: int = 500
    ) -> EventPage:
        """At most ``limit`` committed events with seq > ``after``, with the session's
        head and earliest retained seq, in one read.

        ``CursorAhead`` when ``after`` is beyond the head; ``ResyncRequired`` when it is
        before the retention cut (``after + 1 < earliest_seq``); ``NotFound`` for no
        session.
        """
        return self._page("list_events", tenant_id, session_id, after=after, limit=limit)

    def conversation_page(
        self, tenant_id: str, session_id: str, *, after: int, limit: int
    ) -> EventPage:
        """As ``event_page``, only the events the transcript is made of
        (``runtime.journal.CONVERSATION_EVENTS``)."""
        return self._page("list_conversation", tenant_id, session_id, after=after, limit=limit)

    def _page(
        self, name: str, tenant_id: str, session_id: str, *, after: int, limit: int
    ) -> EventPage:
        rows = self._rows(
            name,
            {"tenant_id": tenant_id, "session_id": session_id, "after": after, "limit": limit},
        )
        if not rows:
            raise NotFound("session not found")
        head, earliest = int(rows[0]["head_seq"]), int(rows[0]["earliest_seq"])
        if after > head:
            raise CursorAhead(after, head)
        if after + 1 < earliest:
            raise ResyncRequired(after, earliest, head)
        events = [_event(r) for r in rows if r["seq"] is not None]
        return EventPage(events=events, head_seq=head, earliest_seq=earliest)

    def turn_events(self, tenant_id: str, session_id: str, turn_id: str) -> list[EventRecord]:
        rows = self._rows(
            "turn_events", {"tenant_id": tenant_id, "session_id": session_id, "turn_id": turn_id}
        )
        return [_event(r) for r in rows]

    def fence_floor(self, tenant_id: str, session_id: str) -> int:
        """The highest fence Postgres has accepted for the session (0 if none)."""
        try:
            return self.get_session(tenant_id, session_id).fence
        except NotFound:
            return 0

    # -- the worker's fenced writes ----------------------------------------------

    def claim(self, tenant_id: str, session_id: str, fence: int) -> bool:
        """Accept ``fence`` only if it is above the stored one. False: lost the race."""
        row = self._one(
            "claim_fence", {"tenant_id": tenant_id, "session_id": session_id, "fence": fence}
        )
        return row is not None

    def start(
        self,
        tenant_id: str,
        session_id: str,
        fence: int,
        *,
        claim: bool,
        agent_hashes: Sequence[str],
        max_attempts: int,
    ) -> Started:
        """Claim ``fence`` (or, ``claim=False``, confirm it is still ours) and start the
        lane head's attempt when it can run here, in one statement.

        A head that moves under the statement (a concurrent answer or cancellation)
        aborts it, writing nothing; it is run again, ``LeaseLost`` only should that keep
        happening.
        """
        params = {
            "tenant_id": tenant_id,
            "session_id": session_id,
            "fence": fence,
            "claim": claim,
            "agent_hashes": list(agent_hashes),
            "max_attempts": max_attempts,
            "window_rows": self.window_rows,
            "window_bytes": self.window_bytes,
        }
        for tries_left in range(START_RACE_TRIES - 1, -1, -1):
            try:
                row = self._one("start_turn", params)
                break
            except pg.DivisionByZero as exc:
                # the head moved under the statement (an answer, a cancellation):
                # nothing was written; read the lane again
                if not tries_left:
                    raise LeaseLost("the lane head kept moving while its attempt started") from exc
        if row is None:  # no session row: nothing was ever admitted here
            return Started(claimed=False, stored_fence=0, head=None)
        head = None if row["turn_id"] is None else _turn(row)
        started = Started(claimed=bool(row["claimed"]), stored_fence=row["stored_fence"], head=head)
        if head is None or row["started_seq"] is None:
            return started
        turn = _turn(
            row,
            state=TurnState.RUNNING,
            revision=row["started_revision"],
            attempt=row["started_attempt"],
            cancel_requested=row["started_cancel_requested"],
            pending_input=None,
        )
        context = [_event_from_json(e) for e in row["context"]]
        begun = EventRecord(
            tenant_id=tenant_id,
            session_id=session_id,
            seq=row["started_seq"],
            turn_id=turn.turn_id,
            type=EventType.TURN_STARTED.value,
            step=None,
            fence=fence,
            data=row["started_data"],
            created_at=row["started_at"],
        )
        return Started(
            claimed=started.claimed,
            stored_fence=started.stored_fence,
            head=head,
            turn=turn,
            prior=tuple(e for e in context if e.turn_id != turn.turn_id),
            events=(*(e for e in context if e.turn_id == turn.turn_id), begun),
        )

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
        then: tuple[EventType, Mapping[str, Any]] | None = None,
        usage: Mapping[str, float] | None = None,
    ) -> Appended:
        """One checkpoint: a compare-and-swap commit guarded by fence and revision,
        moving the turn to ``state``. ``then``: the terminal event a settling step
        appends after its own, in the same statement. ``usage``: the step's tokens and
        cost, added to the turn's and the session's in the same statement.

        ``LeaseLost`` when nothing matched (nothing written, no seq taken).
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
            "n_events": 1 if then is None else 2,
            "then_type": None if then is None else then[0].value,
            "then_data": None if then is None else _json(dict(then[1])),
            "settles": state in TERMINAL_STATES,
            "usage": _json(None if usage is None else dict(usage)),
        }
        try:
            rows = self._rows("fenced_append", params)
        except pg.UniqueViolation as exc:
            raise OutcomeAlreadyRecorded(f"step {step} already has an outcome") from exc
        except pg.DivisionByZero as exc:
            # the statement's own guard: the session matched but the turn did not
            raise LeaseLost(f"revision {revision} is no longer current") from exc
        if not rows:
            raise LeaseLost(f"fence {fence} or revision {revision} is no longer current")
        last = rows[-1]
        return Appended(
            revision=last["turn_revision"],
            attempt=last["turn_attempt"],
            cancel_requested=bool(last["turn_cancel_requested"]),
            events=tuple(_event(r) for r in rows),
            lane_runnable=bool(last["lane_runnable"]),
            webhook=bool(last["webhook"]),
        )

    # -- requests from people ----------------------------------------------------

    def request_cancel(
        self, tenant_id: str, session_id: str, turn_id: str, *, subject: str
    ) -> tuple[EventRecord, ...]:
        """Cancel a turn: settled at once when no worker is stepping it (the events are
        ``turn.cancel_requested`` then ``turn.cancelled``), else requested (the worker
        stops at its next safe point). Empty when the request was already recorded.

        ``NotFound`` for no such turn; ``TurnNotActive`` when it already ended.
        """
        rows = self._rows(
            "request_cancel",
            {
                "tenant_id": tenant_id,
                "session_id": session_id,
                "turn_id": turn_id,
                "data": _json({"by": subject}),
            },
        )
        if rows:
            return tuple(sorted((_event(r) for r in rows), key=lambda e: e.seq))
        turn = self._get_turn(tenant_id, session_id, turn_id)
        if turn is None:
            raise NotFound("turn not found")
        if turn.state.terminal:
            raise TurnNotActive(f"turn is {turn.state.value}")
        return ()

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
        response_hash: str | None = None,
    ) -> EventRecord:
        """Answer a parked turn's open input request, once. ``response`` is what the
        journal keeps; ``response_hash`` the hash of what was answered (a secret answer
        is journalled as its hash alone).

        ``NotFound``: no such turn or request. ``InputNotOpen``: answered already, or
        expired (``expired=True`` is the recovery scan settling an expired request).
        """
        params = {
            "tenant_id": tenant_id,
            "session_id": session_id,
            "turn_id": turn_id,
            "request_id": request_id,
            "response": _json(dict(response)),
            "response_hash": response_hash or sha256_hex(dict(response)),
            "subject": subject,
            "expired": expired,
        }
        row = self._one("resolve_input", params)
        if row is not None:
            return _event(row)
        turn = self._get_turn(tenant_id, session_id, turn_id)
        pending = None if turn is None else turn.pending_input
        if turn is None or not pending or pending.get("request_id") != request_id:
            raise NotFound("input request not found")
        if pending.get("resolved"):
            raise InputNotOpen("the input request was already answered")
        raise InputNotOpen("the input request expired")

    def expired_inputs(self, *, limit: int) -> list[tuple[str, str, str, str]]:
        """(tenant, session, turn, request id) of waits whose request expired unanswered."""
        rows = self._rows("scan_expired_inputs", {"limit": limit})
        return [(r["tenant_id"], r["session_id"], r["turn_id"], r["request_id"]) for r in rows]

    def settled_delegations(self, *, limit: int) -> list[tuple[str, str, str]]:
        """(tenant, session, turn) of parents whose delegation is unanswered though
        every child has ended."""
        rows = self._rows("scan_delegations", {"limit": limit})
        return [(r["tenant_id"], r["session_id"], r["turn_id"]) for r in rows]

    # -- recovery ----------------------------------------------------------------

    def stalled_sessions(
        self, *, grace: float, limit: int, after: StalledCursor | None = None
    ) -> tuple[list[tuple[str, str]], StalledCursor | None]:
        """Sessions whose lane head can run and whose journal has not moved in ``grace``,
        oldest first, one keyset page; the cursor for the next page (None at the end)."""
        ts, tenant, session = after or (datetime(1970, 1, 1, tzinfo=UTC), "", "")
        rows = self._rows(
            "scan_stalled",
            {
                "grace": grace,
                "limit": limit,
                "after_ts": ts,
                "after_tenant": tenant,
                "after_session": session,
            },
        )
        page = [(r["tenant_id"], r["session_id"]) for r in rows]
        last = rows[-1] if rows else None
        cursor = (
            (last["updated_at"], last["tenant_id"], last["session_id"])
            if last is not None and len(rows) == limit
            else None
        )
        return page, cursor

    def active_turn_counts(self) -> dict[tuple[str, str], int]:
        """Active turns across tenants by (agent, state): what the backlog gauges show."""
        rows = self._rows("count_active_turns", {})
        return {(str(r["agent_name"]), str(r["state"])): int(r["n"]) for r in rows}

    # -- journal retention -------------------------------------------------------

    def retention_candidates(
        self, *, retain: int, limit: int, after: SessionCursor | None = None
    ) -> tuple[list[SessionCursor], SessionCursor | None]:
        """Sessions keeping more than ``retain`` events, one keyset page by primary key;
        the cursor for the next page (None at the end)."""
        tenant, session = after or ("", "")
        rows = self._rows(
            "retention_candidates",
            {"retain": retain, "limit": limit, "after_tenant": tenant, "after_session": session},
        )
        page = [(r["tenant_id"], r["session_id"]) for r in rows]
        return page, (page[-1] if page and len(rows) == limit else None)

    def prune(
        self,
        tenant_id: str,
        session_id: str,
        *,
        retain: int,
        batch: int,
        window_rows: int | None = None,
        steps_grace: float = TOOL_STEPS_GRACE,
    ) -> Pruned:
        """Delete at most ``batch`` of the session's oldest events beyond its newest
        ``retain``, keeping every event an active turn or the context window
        (``window_rows``, by default the one this store's ``start`` reads) still needs,
        and move ``earliest_seq`` past them; and at most ``batch`` recorded tool steps
        of turns that ended over ``steps_grace`` seconds ago: one statement
        (``prune_events``).

        ``NotFound`` for no session.
        """
        row = self._one(
            "prune_events",
            {
                "tenant_id": tenant_id,
                "session_id": session_id,
                "retain": retain,
                "batch": batch,
                "window_rows": self.window_rows if window_rows is None else window_rows,
                "steps_grace": steps_grace,
            },
        )
        if row is None:
            raise NotFound("session not found")
        return Pruned(
            deleted=int(row["deleted"]),
            earliest_seq=int(row["earliest_seq"]),
            head_seq=int(row["head_seq"]),
            steps_deleted=int(row["steps_deleted"]),
        )

    # -- webhooks (the outbox of workflow nodes) -------------------------------------

    def get_webhook(self, tenant_id: str, session_id: str, turn_id: str) -> WebhookRecord | None:
        row = self._one(
            "get_webhook", {"tenant_id": tenant_id, "session_id": session_id, "turn_id": turn_id}
        )
        return None if row is None else _webhook(row)

    def claim_webhook(
        self, tenant_id: str, session_id: str, turn_id: str, *, claim: str, lease: float
    ) -> Claimed | None:
        """Claim one settled turn's undelivered, due webhook for ``lease`` seconds under
        the token ``claim`` (one attempt counted); None when there is nothing to do."""
        row = self._one(
            "claim_webhook",
            {
                "tenant_id": tenant_id,
                "session_id": session_id,
                "turn_id": turn_id,
                "claim": claim,
                "lease": lease,
            },
        )
        return None if row is None else _claimed(row)

    def claim_webhooks(
        self, *, claim: str, lease: float, limit: int, after: WebhookCursor | None = None
    ) -> tuple[list[Claimed], WebhookCursor | None]:
        """One keyset page of undelivered, due webhooks: those of settled turns claimed
        as ``claim_webhook`` claims one; the cursor for the next page (None at the end)."""
        ts, tenant, session, turn = after or (datetime(1970, 1, 1, tzinfo=UTC), "", "", "")
        rows = self._rows(
            "claim_webhooks",
            {
                "claim": claim,
                "lease": lease,
                "limit": limit,
                "after_ts": ts,
                "after_tenant": tenant,
                "after_session": session,
                "after_turn": turn,
            },
        )
        claimed = [_claimed(r) for r in rows if r["tenant_id"] is not None]
        last = rows[-1] if len(rows) == limit else None
        cursor = (
            None
            if last is None
            else (last["page_at"], last["page_tenant"], last["page_session"], last["page_turn"])
        )
        return claimed, cursor

    def webhook_delivered(
        self, tenant_id: str, session_id: str, turn_id: str, *, status: int
    ) -> bool:
        """Record an acknowledged attempt; False when it was recorded already."""
        row = self._one(
            "webhook_delivered",
            {
                "tenant_id": tenant_id,
                "session_id": session_id,
                "turn_id": turn_id,
                "status": status,
            },
        )
        return row is not None

    def webhook_retry(
        self,
        tenant_id: str,
        session_id: str,
        turn_id: str,
        *,
        claim: str,
        delay: float,
        status: int | None,
        error: str,
    ) -> bool:
        """Record a failed attempt and schedule the next in ``delay`` seconds; False when
        the claim is no longer the newest (or the webhook was delivered meanwhile)."""
        row = self._one(
            "webhook_retry",
            {
                "tenant_id": tenant_id,
                "session_id": session_id,
                "turn_id": turn_id,
                "claim": claim,
                "delay": delay,
                "status": status,
                "error": error,
            },
        )
        return row is not None

    # -- tool steps (ToolContext.step, worker/tool_steps.py) -----------------------------

    def get_tool_step(
        self, tenant_id: str, session_id: str, turn_id: str, step: int, name: str
    ) -> ToolStepRecord | None:
        """The step ``name`` of the tool call at ``step``, if recorded."""
        row = self._one(
            "get_tool_step",
            {
                "tenant_id": tenant_id,
                "session_id": session_id,
                "turn_id": turn_id,
                "step": step,
                "name": name,
            },
        )
        return None if row is None else ToolStepRecord(**row)

    def record_tool_step(
        self, tenant_id: str, session_id: str, turn_id: str, step: int, name: str, result: Any
    ) -> tuple[ToolStepRecord, bool]:
        """Record ``result`` (JSON) as the step ``name`` of the tool call at ``step``
        unless one is recorded already (first writer wins): the recorded step, and
        whether this call wrote it. Not fenced (see ``record_tool_step``)."""
        params = {
            "tenant_id": tenant_id,
            "session_id": session_id,
            "turn_id": turn_id,
            "step": step,
            "name": name,
            "result": json.dumps(result, separators=(",", ":")),
        }
        row = self._one("record_tool_step", params)
        if row is not None:
            return ToolStepRecord(**row), True
        winner = self.get_tool_step(tenant_id, session_id, turn_id, step, name)
        if winner is None:  # rows are never deleted while their call can run
            raise NotFound(f"tool step {name!r} lost its insert and is not there")
        return winner, False

    # -- forks (POST /v1/sessions/{sid}/fork; store/forks.py) ----------------------------

    def fork(self, tenant_id: str, source_id: str, session_id: str, *, at_seq: int) -> Forked:
        """Fork ``source_id`` at ``at_seq`` into the new session ``session_id``: one
        transaction (``fork_source``, ``fork_session``, ``fork_turns``, ``fork_events``),
        so nothing of a fork is visible before it is whole. The source is only read.

        Idempotent by ``session_id``: a fork of that id from the same source and seq is
        answered as it stands (``created=False``), whatever the source did since.
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
            "cut_error": _json({"code": FORK_CUT, "message": message}),
        }
        with self.db.transaction(_tenant(params)) as conn:
            src = conn.execute(q("fork_source"), params).fetchone()
            if src is None:
                raise NotFound("session not found")
            if src["fork_id"] is None:
                head, earliest = int(src["head_seq"]), int(src["earliest_seq"])
                if at_seq < earliest:
                    raise ForkPointPruned(at_seq, earliest, head)
                if at_seq > head:
                    raise ForkPointAhead(at_seq, head)
                row = conn.execute(q("fork_session"), params).fetchone()
                if row is not None:
                    turns = conn.execute(q("fork_turns"), params).fetchone()
                    conn.execute(q("fork_events"), params).fetchone()
                    cut = tuple(turns["cut_turns"] or ()) if turns is not None else ()
                    return Forked(_session(row), source_id, at_seq, created=True, cut=cut)
        # the id is taken (before, or by a concurrent fork just now): a replay or not
        return self._forked(tenant_id, source_id, session_id, at_seq)

    def _forked(self, tenant_id: str, source_id: str, session_id: str, at_seq: int) -> Forked:
        row = self._one("get_session", {"tenant_id": tenant_id, "session_id": session_id})
        if row is None:  # sessions are never deleted: only a rolled-back race gets here
            raise NotFound("session not found")
        if row["forked_from_session"] is None:
            raise SessionExists(f"session {session_id!r} exists and is not a fork")
        if (row["forked_from_session"], row["forked_from_seq"]) != (source_id, at_seq):
            raise IdempotencyConflict(f"session {session_id!r} is another fork")
        return Forked(_session(row), source_id, at_seq, created=False)

    def forked_from(self, tenant_id: str, session_id: str) -> tuple[str, int] | None:
        """The source session and seq of a fork, None for a session that is no fork;
        ``NotFound`` for no session."""
        row = self._one("get_session", {"tenant_id": tenant_id, "session_id": session_id})
        if row is None:
            raise NotFound("session not found")
        if row["forked_from_session"] is None:
            return None
        return str(row["forked_from_session"]), int(row["forked_from_seq"])

    # -- attachments (api/routes_attachments.py; store/attachments.py) ---------------------

    def insert_attachment(
        self,
        tenant_id: str,
        session_id: str,
        attachment_id: str,
        *,
        filename: str,
        content_type: str,
        size: int,
        sha256: str,
    ) -> AttachmentRecord | None:
        """An upload's first statement: the row, pending, no content. None when nothing
        was written: no such session, or the id is taken (``get_attachment`` says which)."""
        row = self._one(
            "insert_attachment",
            _attachment_params(
                tenant_id,
                session_id,
                attachment_id,
                filename=filename,
                content_type=content_type,
                size=size,
                sha256=sha256,
            ),
        )
        return None if row is None else _attachment(row)

    def attachment_content(
        self, tenant_id: str, session_id: str, attachment_id: str, *, data: bytes, sha256: str
    ) -> bool:
        """An upload's second statement: the content of a pending row of that hash.
        False: the row is not pending, or has another hash."""
        params = _attachment_params(tenant_id, session_id, attachment_id, data=data, sha256=sha256)
        return self._one("attachment_content", params) is not None

    def attachment_ready(
        self, tenant_id: str, session_id: str, attachment_id: str
    ) -> AttachmentRecord | None:
        """An upload's last statement: pending with content -> ready. None: not pending."""
        params = _attachment_params(tenant_id, session_id, attachment_id)
        row = self._one("attachment_ready", params)
        return None if row is None else _attachment(row)

    def get_attachment(
        self, tenant_id: str, session_id: str, attachment_id: str
    ) -> AttachmentRecord | None:
        """The attachment's metadata in whatever state; None: no such attachment."""
        params = _attachment_params(tenant_id, session_id, attachment_id, with_data=False)
        row = self._one("get_attachment", params)
        return None if row is None else _attachment(row)

    def attachment_data(
        self, tenant_id: str, session_id: str, attachment_id: str
    ) -> tuple[AttachmentRecord, bytes]:
        """A ready attachment and its content. ``NotFound``: none, or being deleted;
        ``AttachmentNotReady``: its upload has not completed."""
        params = _attachment_params(tenant_id, session_id, attachment_id, with_data=True)
        row = self._one("get_attachment", params)
        if row is None or row["state"] == AttachmentState.DELETING:
            raise NotFound("attachment not found")
        if row["state"] != AttachmentState.READY or row["data"] is None:
            raise AttachmentNotReady("the attachment's upload has not completed")
        return _attachment(row), bytes(row["data"])

    def attachment_states(
        self, tenant_id: str, session_id: str, ids: Sequence[str]
    ) -> dict[str, AttachmentState]:
        """The states of those of ``ids`` that are attachments of the session."""
        params = {"tenant_id": tenant_id, "session_id": session_id, "ids": list(ids)}
        rows = self._rows("attachment_refs", params)
        return {r["attachment_id"]: AttachmentState(r["state"]) for r in rows}

    def attachment_deleting(self, tenant_id: str, session_id: str, attachment_id: str) -> bool:
        """A deletion's first statement: -> deleting. False: no such attachment."""
        params = _attachment_params(tenant_id, session_id, attachment_id)
        return self._one("attachment_deleting", params) is not None

    def delete_attachment(self, tenant_id: str, session_id: str, attachment_id: str) -> bool:
        """A deletion's second statement: the deleting row goes. False: gone already."""
        params = _attachment_params(tenant_id, session_id, attachment_id)
        return self._one("delete_attachment", params) is not None

    def sweep_attachments(
        self, *, grace: float, limit: int
    ) -> list[tuple[str, str, str, AttachmentState]]:
        """Across tenants: delete at most ``limit`` attachments left pending or deleting
        for more than ``grace`` seconds (their API process died between statements),
        oldest first; (tenant, session, attachment, state) of each. A sweep that
        returns ``limit`` rows may have left more: call it again."""
        params = {
            **_ATTACHMENT_STATES,
            "grace": grace,
            "limit": limit,
        }
        rows = self._rows("sweep_attachments", params)
        return [
            (r["tenant_id"], r["session_id"], r["attachment_id"], AttachmentState(r["state"]))
            for r in rows
        ]

    # -- projects (api/projects.py; docs/projects.md) ------------------------------------

    def session_project(self, tenant_id: str, session_id: str) -> tuple[str | None, str | None]:
        """The session's project and its owner, (None, None) for a session in no
        project; ``NotFound`` for no session. One read."""
        row = self._one("session_project", {"tenant_id": tenant_id, "session_id": session_id})
        if row is None:
            raise NotFound("session not found")
        return row["project_id"], row["owner"]

    def create_project(
        self,
        tenant_id: str,
        project_id: str,
        *,
        owner: str,
        overrides: Mapping[str, Any],
        request_hash: str,
    ) -> ProjectRecord | None:
        """Create a project owned by ``owner``; None when the id is taken (by a replay,
        another request, or another subject: ``get_project`` tells the first two)."""
        row = self._one(
            "create_project",
            {
                "tenant_id": tenant_id,
                "project_id": project_id,
                "owner": owner,
                "overrides": _json(dict(overrides)),
                "request_hash": request_hash,
            },
        )
        return None if row is None else ProjectRecord(**row)

    def get_project(self, tenant_id: str, project_id: str, *, owner: str) -> ProjectRecord:
        """``owner``'s project; ``NotFound`` for none, and for another subject's."""
        row = self._one(
            "get_project", {"tenant_id": tenant_id, "project_id": project_id, "owner": owner}
        )
        if row is None:
            raise NotFound("project not found")
        return ProjectRecord(**row)

    def list_projects(
        self,
        tenant_id: str,
        *,
        owner: str,
        limit: int,
        before: tuple[datetime, str] | None = None,
    ) -> list[ProjectRecord]:
        """At most ``limit`` of ``owner``'s projects, newest first; ``before`` is the
        (created_at, project_id) of the last one of the previous page."""
        at, pid = before if before is not None else (None, "")
        rows = self._rows(
            "list_projects",
            {
                "tenant_id": tenant_id,
                "owner": owner,
                "limit": limit,
                "before_at": at,
                "before_id": pid,
            },
        )
        return [ProjectRecord(**r) for r in rows]

    def update_project(
        self, tenant_id: str, project_id: str, *, owner: str, overrides: Mapping[str, Any]
    ) -> ProjectRecord:
        """Replace the overrides of ``owner``'s project; ``NotFound`` for none (and for
        another subject's)."""
        row = self._one(
            "update_project",
            {
                "tenant_id": tenant_id,
                "project_id": project_id,
                "owner": owner,
                "overrides": _json(dict(overrides)),
            },
        )
        if row is None:
            raise NotFound("project not found")
        return ProjectRecord(**row)

    # -- memory (runtime/memory.py, worker/memory.py; docs/memory.md) -------------------

    def remember_fact(
        self,
        tenant_id: str,
        scope_key: str,
        source_key: str,
        fact: str,
        *,
        session_id: str,
        turn_id: str,
    ) -> bool:
        """Keep ``fact`` under ``scope_key``, written by the tool call ``source_key``
        (its idempotency key): whether this call wrote it (False: a run of that call
        wrote it before). Not fenced (see ``remember_fact``)."""
        row = self._one(
            "remember_fact",
            {
                "tenant_id": tenant_id,
                "scope_key": scope_key,
                "source_key": source_key,
                "fact": fact,
                "session_id": session_id,
                "turn_id": turn_id,
            },
        )
        return row is not None

    def recall_facts(
        self, tenant_id: str, scope_key: str, *, before: datetime, limit: int
    ) -> list[MemoryRecord]:
        """At most ``limit`` facts of ``scope_key`` remembered before ``before``, newest
        first."""
        rows = self._rows(
            "recall_facts",
            {"tenant_id": tenant_id, "scope_key": scope_key, "before": before, "limit": limit},
        )
        return [MemoryRecord(**r) for r in rows]


#: the state names the attachment statements take as parameters (queries.sql compares
#: with no literal but turn states and event types)
_ATTACHMENT_STATES = {s.name.lower(): s.value for s in AttachmentState}
_ATTACHMENT_FIELDS = tuple(f.name for f in fields(AttachmentRecord))


def _attachment_params(
    tenant_id: str, session_id: str, attachment_id: str, **values: Any
) -> dict[str, Any]:
    return {
        **_ATTACHMENT_STATES,
        "tenant_id": tenant_id,
        "session_id": session_id,
        "attachment_id": attachment_id,
        **values,
    }


def _attachment(row: Row) -> AttachmentRecord:
    values = {name: row[name] for name in _ATTACHMENT_FIELDS}
    values["state"] = AttachmentState(values["state"])
    return AttachmentRecord(**values)
