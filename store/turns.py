"""The transitions: admission, the fence claim, a turn's start, a step's commit,
cancellation and answers (the statements of sql/turns.sql).

Every transition is one statement in autocommit, so one round trip and one
server transaction (only an admission that looks at the lane, ``multitask`` reject
or interrupt, runs a short transaction of up to three, one more with a workflow
node's webhook: ``Turns._admit_locked``); a fenced write that matches no row raises
``LeaseLost`` and has written nothing, so a worker that lost its lease writes
nothing. The SQL refuses a transition ``runtime/states.TRANSITIONS`` does not
declare (store/sql.py renders the guards from it), whatever the caller believes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from psycopg import errors as pg

from turnkeep.runtime.hashing import sha256_hex
from turnkeep.runtime.input_groups import GroupAnswer
from turnkeep.runtime.multitask import Multitask
from turnkeep.runtime.states import EventType, TurnState
from turnkeep.store.connector import Connector
from turnkeep.store.context_cache import NO_WINDOW, ContextCache, Window, WindowRow, window_of
from turnkeep.store.db import Database, Row
from turnkeep.store.errors import (
    IdempotencyConflict,
    InputNotOpen,
    LaneHeadMoved,
    LeaseLost,
    NotFound,
    OutcomeAlreadyRecorded,
    QuotaExceeded,
    RevisionMoved,
    SessionAgentConflict,
    SessionBusy,
    SessionDeleted,
    SessionMetadataConflict,
    TurnIdTaken,
    TurnNotActive,
    refusal,
)
from turnkeep.store.new_turn import UNBOUNDED, Bounds, NewTurn
from turnkeep.store.reads import Reads
from turnkeep.store.records import Admission, Appended, EventRecord, LaneStarted, WebhookSpec
from turnkeep.store.rows import event_from_row, event_record, first, jsonb, turn_record
from turnkeep.store.statements import Statements, tenant_of
from turnkeep.store.step_commit import StepCommit
from turnkeep.store.waits import Waits

#: start_turn runs again this often when the lane head moved under it
START_RACE_TRIES = 5


def _refused(row: Row, params: Mapping[str, Any]) -> None:
    """Raise what ``admit_turn``'s row says refused a new turn id (nothing written):
    ``SessionBusy`` under ``reject``, else ``QuotaExceeded``."""
    if row["gone"]:
        raise SessionDeleted()
    if row["busy"]:
        raise SessionBusy("the session has an active turn")
    if row["session_full"]:
        raise QuotaExceeded("session", int(params["max_session"]))
    if row["tenant_full"]:
        raise QuotaExceeded("tenant", int(params["max_tenant"]))


class Turns(Statements):
    """The transitions of a turn. A refused admission, cancellation or answer reads
    the turn (``Reads``) to tell the caller why."""

    def __init__(
        self,
        db: Database | Connector,
        *,
        reads: Reads,
        waits: Waits,
        context: ContextCache,
        **window: int,
    ) -> None:
        super().__init__(db, **window)
        #: the Store's own parts: a refusal reads why there, a group is answered by waits
        self.reads, self.waits = reads, waits
        #: the context windows of this process's last starts (store/context_cache.py)
        self.context = context

    def admit(self, new: NewTurn, bounds: Bounds = UNBOUNDED) -> Admission:
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
        another agent's is (``SessionAgentConflict``: api/service/admission.py tells which).

        A session deleted or past its TTL admits nothing, a replay neither:
        ``SessionDeleted``. An admission moves the session's expiry to now plus
        ``expires_after`` (else the session's own, else ``default_ttl``; docs/erasure.md).
        ``metadata``: the turn's labels; ``session_metadata``: a new session's, and for
        one that exists the labels it must have (``SessionMetadataConflict``).
        """
        params = new.params(bounds)
        tenant_id, session_id, turn_id = new.tenant_id, new.session_id, new.turn_id
        agent_name, project_id = new.agent_name, new.project_id
        multitask, webhook, session_metadata = new.multitask, new.webhook, new.session_metadata
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
        except TurnIdTaken:
            row = None  # the turn id exists, or the session is not this admission's
        except SessionDeleted:  # say when (one more read, on refusal only)
            raise self.reads.gone(tenant_id, session_id) or SessionDeleted() from None
        if row is not None:
            turn = turn_record(row)
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
        existing = self.reads._get_turn(tenant_id, session_id, turn_id)
        if existing is None and session_metadata:
            found = self._one("get_session", {"tenant_id": tenant_id, "session_id": session_id})
            if found is not None and (found["agent_name"], found["project_id"]) == (
                agent_name,
                project_id,
            ):
                raise SessionMetadataConflict(f"session {session_id!r} has other metadata")
        if existing is None:
            # refused by the upsert's guard: another agent or project, or deleted (or
            # expired) while the statement waited for the row
            gone = self.reads.gone(tenant_id, session_id)
            if gone is not None:
                raise gone
            raise SessionAgentConflict(
                f"session {session_id!r} is bound to another agent than {agent_name!r}"
            )
        if existing.input_hash != new.input_hash:
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

        A replay aborts ``admit_turn`` (``TurnIdTaken``, raised), so the whole
        transaction rolls back and nothing is cancelled; a busy lane under ``reject``
        raises ``SessionBusy`` and a quota reached ``QuotaExceeded``, rolling back too.
        Another agent's session aborts ``admit_turn`` as a replay does.
        """
        with self.connector.transaction(tenant_of(params)) as tx:
            if lock:
                tx.rows("lock_session", params)
            try:
                row = first(tx.rows("admit_turn", params))
            except pg.DivisionByZero as exc:
                raise refusal("admit_turn", exc) from exc
            if row is None:
                return None, ()
            _refused(row, params)
            if webhook is not None:
                tx.rows(
                    "insert_webhook",
                    {
                        "tenant_id": params["tenant_id"],
                        "session_id": params["session_id"],
                        "turn_id": params["turn_id"],
                        "run_id": webhook.run_id,
                        "node_id": webhook.node_id,
                        "url": webhook.url,
                        "secret_id": webhook.secret_id,
                        "delivery_id": webhook.delivery_id,
                        "connector": webhook.connector,
                        "target": jsonb(webhook.target),
                    },
                )
            if not interrupt:
                return row, ()
            data = {
                "by": params["submitted_by"],
                "reason": "interrupted",
                "by_turn": row["turn_id"],
            }
            rows = tx.rows(
                "interrupt_lane", {**params, "ordinal": row["ordinal"], "data": jsonb(data)}
            )
        return row, tuple(sorted((event_record(r) for r in rows), key=lambda e: e.seq))

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
    ) -> LaneStarted:
        """Claim ``fence`` (or, ``claim=False``, confirm it is still ours) and start the
        lane head's attempt when it can run here, in one statement.

        A head that moves under the statement (a concurrent answer or cancellation)
        aborts it, writing nothing; it is run again, ``LeaseLost`` only should that keep
        happening. The session's window kept from this process's last start of it
        (``self.context``) is named, and the statement sends only what follows it
        while it holds (docs/context.md).
        """
        cached = self.context.get(tenant_id, session_id)
        params = {
            "tenant_id": tenant_id,
            "session_id": session_id,
            "fence": fence,
            "claim": claim,
            "agent_hashes": list(agent_hashes),
            "max_attempts": max_attempts,
            "window_rows": self.window_rows,
            "window_bytes": self.window_bytes,
            **(NO_WINDOW if cached is None else cached.since()),
        }
        for tries_left in range(START_RACE_TRIES - 1, -1, -1):
            try:
                row = self._one("start_turn", params)
                break
            except LaneHeadMoved as exc:
                if not tries_left:
                    raise LeaseLost("the lane head kept moving while its attempt started") from exc
        return started_from(row, tenant_id, session_id, fence, self.context, cached, self)

    def append(self, tenant_id: str, session_id: str, fence: int, commit: StepCommit) -> Appended:
        """One checkpoint (``commit``, store/step_commit.py): a compare-and-swap commit
        guarded by ``fence`` and the commit's revision, moving the turn to its state;
        its ``then`` event, usage and provider state in the same statement.

        ``LeaseLost`` when nothing matched (nothing written, no seq taken).
        """
        params = commit.params(tenant_id, session_id, fence)
        step, revision = commit.step, commit.revision
        try:
            rows = self._rows("fenced_append", params)
        except pg.UniqueViolation as exc:
            raise OutcomeAlreadyRecorded(f"step {step} already has an outcome") from exc
        except RevisionMoved as exc:
            raise LeaseLost(f"revision {revision} is no longer current") from exc
        if not rows:
            raise LeaseLost(f"fence {fence} or revision {revision} is no longer current")
        last = rows[-1]
        return Appended(
            revision=last["turn_revision"],
            attempt=last["turn_attempt"],
            cancel_requested=bool(last["turn_cancel_requested"]),
            events=tuple(event_record(r) for r in rows),
            lane_runnable=bool(last["lane_runnable"]),
            webhook=bool(last["webhook"]),
        )

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
                "data": jsonb({"by": subject}),
            },
        )
        if rows:
            return tuple(sorted((event_record(r) for r in rows), key=lambda e: e.seq))
        turn = self.reads._get_turn(tenant_id, session_id, turn_id)
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
            "response": jsonb(dict(response)),
            "response_hash": response_hash or sha256_hex(dict(response)),
            "subject": subject,
            "expired": expired,
        }
        row = self._one("resolve_input", params)
        if row is not None:
            return event_record(row)
        turn = self.reads._get_turn(tenant_id, session_id, turn_id)
        pending = None if turn is None else turn.pending_input
        if pending is not None and pending.is_group:
            # asked with others (runtime/input_groups.py): by compare-and-swap
            ids = [request_id]
            if expired:  # the scan: every request of the group past its expiry, at once
                ids += [r for r in pending.due() if r != request_id]
            digest = str(params["response_hash"])
            answers = [GroupAnswer(r, dict(response), digest) for r in ids]
            return self.waits.resolve_inputs(
                tenant_id, session_id, turn_id, answers, subject=subject, expired=expired
            )[0]
        if turn is None or pending is None or pending.request_id != request_id:
            raise NotFound("input request not found")
        if pending.resolved:
            raise InputNotOpen("the input request was already answered")
        raise InputNotOpen("the input request expired")


def started_from(
    row: Row | None,
    tenant_id: str,
    session_id: str,
    fence: int,
    cache: ContextCache,
    cached: Window | None,
    on: Statements,
) -> LaneStarted:
    """What ``start_turn``'s row says (also under a max_running limit: store/max_running.py),
    given the window it named (``cached``) and the window's bounds (``on``'s); the
    window it read is kept in ``cache`` when it is the whole conversation's (not a
    rerun's or a delegated child's)."""
    if row is None:  # no session row: nothing was ever admitted here
        return LaneStarted(claimed=False, stored_fence=0, head=None)
    head = None if row["turn_id"] is None else turn_record(row)
    started = LaneStarted(claimed=bool(row["claimed"]), stored_fence=row["stored_fence"], head=head)
    if head is None or row["started_seq"] is None:
        return started
    turn = turn_record(
        row,
        state=TurnState.RUNNING,
        revision=row["started_revision"],
        attempt=row["started_attempt"],
        cancel_requested=row["started_cancel_requested"],
        pending_input=None,
    )
    own: list[EventRecord] = []
    sent: list[WindowRow] = []
    for e in row["context"]:
        event = event_from_row(tenant_id, session_id, e[:7])
        if event.turn_id == turn.turn_id:
            own.append(event)
        else:
            sent.append(WindowRow(event, e[7], e[8]))
    window = window_of(
        cache, row, sent, cached, window_rows=on.window_rows, window_bytes=on.window_bytes
    )
    if row["whole"]:
        cache.put(tenant_id, session_id, window)
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
    return LaneStarted(
        claimed=started.claimed,
        stored_fence=started.stored_fence,
        head=head,
        turn=turn,
        prior=tuple(r.event for r in window.rows),
        events=(*own, begun),
        decoded=window.decoded,
    )
