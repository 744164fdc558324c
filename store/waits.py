"""Answers to the requests of a group (the approvals of one model answer, asked
together: runtime/input_groups.py), one or several at once, by compare-and-swap on the
turn's revision (the statement of sql/waits.sql)."""

from __future__ import annotations

from collections.abc import Sequence

from turnkeep.runtime import input_groups
from turnkeep.runtime.input_groups import GroupAnswer, GroupRefused
from turnkeep.store.connector import Connector
from turnkeep.store.db import Database
from turnkeep.store.errors import InputExpired, InputNotOpen, NotFound, Unavailable
from turnkeep.store.reads import Reads
from turnkeep.store.records import EventRecord
from turnkeep.store.rows import event_record, jsonb
from turnkeep.store.statements import Statements

#: answers racing each other on one group: each loser reads the turn again
CAS_TRIES = 8


class Waits(Statements):
    """``resolve_inputs``: what ``Store.turns.resolve_input`` answers a group's request
    with, and the API's answer to several requests in one POST."""

    def __init__(self, db: Database | Connector, *, reads: Reads, **window: int) -> None:
        super().__init__(db, **window)
        #: the turn each try reads (the Store's own part)
        self.reads = reads

    def resolve_inputs(
        self,
        tenant_id: str,
        session_id: str,
        turn_id: str,
        answers: Sequence[GroupAnswer],
        *,
        subject: str,
        expired: bool = False,
    ) -> list[EventRecord]:
        """Answer requests of the parked turn's group, all or none, once each: their
        ``input.resolved`` events in the order given. ``NotFound``: no such turn, or a
        request not in its wait; ``InputNotOpen``: one answered already;
        ``InputExpired``: one past its expiry (``expired=True``: the scan settling
        them); ``Unavailable``: the turn kept moving under every try."""
        for _ in range(CAS_TRIES):
            turn = self.reads._get_turn(tenant_id, session_id, turn_id)
            if turn is None:
                raise NotFound("turn not found")
            pending = turn.pending_input
            if pending is None or not pending.is_group:
                raise NotFound("input request not found")
            try:
                done = input_groups.answer(pending, answers, by=subject, expired=expired)
            except GroupRefused as exc:
                if exc.reason == "missing":
                    raise NotFound("input request not found") from None
                if exc.reason == "expired":
                    raise InputExpired("the input request expired unanswered") from None
                raise InputNotOpen("the input request was already answered") from None
            rows = self._rows(
                "resolve_grouped",
                {
                    "tenant_id": tenant_id,
                    "session_id": session_id,
                    "turn_id": turn_id,
                    "revision": turn.revision,
                    "pending_input": jsonb(done.pending_input),
                    "n": len(done.resolved),
                    "resolved": jsonb([{"data": r} for r in done.resolved]),
                },
            )
            if rows:
                return sorted((event_record(r) for r in rows), key=lambda e: e.seq)
        raise Unavailable("the turn kept moving while its requests were answered; try again")
