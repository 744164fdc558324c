"""Reruns in the store: a new turn whose journal starts with the outcomes it reuses
(the statements of sql/reruns.sql; runtime/reruns.py decides what they are,
docs/reruns.md)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import psycopg.errors as pg

from turnkeep.runtime.states import EventType
from turnkeep.store.connector import Connector
from turnkeep.store.db import Database
from turnkeep.store.errors import (
    IdempotencyConflict,
    QuotaExceeded,
    RerunIdTaken,
    SessionAgentConflict,
    refusal,
)
from turnkeep.store.new_turn import UNBOUNDED, Bounds, NewTurn
from turnkeep.store.reads import Reads
from turnkeep.store.records import Admission, EventRecord
from turnkeep.store.rows import event_record, first, jsonb, turn_record
from turnkeep.store.statements import Statements, tenant_of


class Reruns(Statements):
    """``POST /v1/sessions/{sid}/turns/{tid}/rerun``'s admission."""

    def __init__(self, db: Database | Connector, *, reads: Reads, **window: int) -> None:
        super().__init__(db, **window)
        #: a replay's reads (the Store's own part)
        self.reads = reads

    def admit_rerun(
        self, new: NewTurn, copies: Sequence[Mapping[str, Any]], bounds: Bounds = UNBOUNDED
    ) -> Admission:
        """Admit the rerun and write the events its journal starts with (``copies``:
        type, step, data each), in one transaction: all of it or nothing. Idempotent by
        ``turn_id`` as any admission: the same hash is the stored turn
        (``created=False``), another ``IdempotencyConflict``; a session of another
        agent ``SessionAgentConflict``; a quota reached ``QuotaExceeded``. The session's
        expiry moves to now plus its TTL (its own, else ``default_ttl``). The
        ``interrupted`` of the answer holds the copies (published as the admission's)."""
        params = {**new.params(bounds), "n_copies": len(copies)}
        tenant_id, session_id, turn_id = new.tenant_id, new.session_id, new.turn_id
        try:
            with self.connector.transaction(tenant_of(params)) as tx:
                try:
                    row = first(tx.rows("admit_rerun", params))
                except pg.DivisionByZero as exc:
                    raise refusal("admit_rerun", exc) from exc
                assert row is not None  # the statement answers one row or refuses
                if row["session_full"]:
                    raise QuotaExceeded("session", int(params["max_session"]))
                if row["tenant_full"]:
                    raise QuotaExceeded("tenant", int(params["max_tenant"]))
                turn = turn_record(row)
                written = tx.rows(
                    "rerun_copies",
                    {
                        "tenant_id": tenant_id,
                        "session_id": session_id,
                        "turn_id": turn_id,
                        "accepted_seq": turn.accepted_seq,
                        "copies": jsonb([dict(c) for c in copies]),
                    },
                )
        except RerunIdTaken:
            return self._rerun_replay(
                tenant_id, session_id, turn_id, new.agent_name, new.input_hash
            )
        accepted = EventRecord(
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
        events = tuple(sorted((event_record(r) for r in written), key=lambda e: e.seq))
        return Admission(turn=turn, created=True, event=accepted, interrupted=events)

    def _rerun_replay(
        self, tenant_id: str, session_id: str, turn_id: str, agent_name: str, input_hash: str
    ) -> Admission:
        gone = self.reads.gone(tenant_id, session_id)
        if gone is not None:  # a replay too: the session never comes back
            raise gone
        existing = self.reads._get_turn(tenant_id, session_id, turn_id)
        if existing is None:
            raise SessionAgentConflict(
                f"session {session_id!r} is bound to another agent than {agent_name!r}"
            )
        if existing.input_hash != input_hash:
            raise IdempotencyConflict(f"turn {turn_id!r} was admitted with another request")
        return Admission(turn=existing, created=False)
