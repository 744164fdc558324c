"""The statements of sql/turns.sql, answered in memory: admission (and the lane
statements of multitask reject and interrupt, a workflow node's webhook), the fence
claim, a turn's start, a step's commit, cancellation and answers.

Each function reads its block of sql/turns.sql as one snapshot, decides, and only
then writes, so a statement that refuses (its ``1 / 0`` guard, a unique index)
writes nothing, its seq included. The comments name the CTE each part answers for.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from typing import Any

from psycopg.errors import ForeignKeyViolation, UniqueViolation

from turnkeep.runtime.states import (
    ACTIVE_STATES,
    PARKED_STATES,
    UNATTENDED_STATES,
    TurnState,
)
from turnkeep.store.db import Row
from turnkeep.store.testing.context import start_context
from turnkeep.store.testing.tables import (
    TURN_COLUMNS,
    Params,
    Statement,
    Tables,
    added_usage,
    canonical,
    jsonb,
    moves,
    refuse,
    resumable,
)

CANCELLED = TurnState.CANCELLED.value
RUNNING = TurnState.RUNNING.value
_ACTIVE = {s.value for s in ACTIVE_STATES}
_UNATTENDED = {s.value for s in UNATTENDED_STATES}
_PARKED = {s.value for s in PARKED_STATES}


def admit_turn(db: Tables, p: Params) -> list[Row]:
    key = (p["tenant_id"], p["session_id"])
    replay = db.turn(p) is not None  # r
    cur = db.sessions.get(key)
    gone = key in db.tombstones or (cur is not None and not _alive(db, cur))
    lane = db.lane(*key)
    busy = not replay and bool(p["reject"]) and bool(lane)  # b
    session_full = (
        not replay and p["max_session"] is not None and len(lane) >= int(p["max_session"])
    )
    tenant_active = sum(
        1 for t in db.turns.values() if t["tenant_id"] == p["tenant_id"] and _active(t)
    )
    tenant_full = (
        not replay and p["max_tenant"] is not None and tenant_active >= int(p["max_tenant"])
    )
    head: int | None = None  # s
    if not gone and (busy or not (session_full or tenant_full)):
        if cur is None:
            head = 1
        elif (cur["agent_name"], cur["project_id"]) == (p["agent_name"], p["project_id"]) and (
            p["session_metadata"] is None or cur["metadata"] == jsonb(p["session_metadata"])
        ):
            head = int(cur["head_seq"]) + 1
    inserts = head is not None and not busy and not replay  # t
    x_busy = busy and head is not None
    if not (inserts or x_busy or session_full or tenant_full or gone):
        raise refuse()
    # the statement stands: write what it wrote
    if head is not None:
        if cur is None:
            db.sessions[key] = _session_row(db, p)
        else:
            ttl = p["expires_after"] or cur["expires_after"]
            db.update(cur, head_seq=head, expires_after=ttl, expires_at=_expiry(db, ttl, p))
    turn: Row = dict.fromkeys(TURN_COLUMNS)
    event: Row = {"event_data": None, "event_created_at": None}
    if inserts and head is not None:
        db.ordinal += 1
        turn = {
            "tenant_id": p["tenant_id"],
            "session_id": p["session_id"],
            "turn_id": p["turn_id"],
            "ordinal": db.ordinal,
            "state": TurnState.QUEUED.value,
            "agent_name": p["agent_name"],
            "agent_hash": p["agent_hash"],
            "input_hash": p["input_hash"],
            "input": jsonb(p["input"]),
            "output_schema": jsonb(p["output_schema"]),
            "budget": jsonb(p["budget"]),
            "attempt": 0,
            "revision": 0,
            "cancel_requested": False,
            "pending_input": None,
            "result": None,
            "error": None,
            "accepted_seq": head,
            "usage": {},
            "submitted_by": p["submitted_by"],
            "created_at": db.clock,
            "updated_at": db.clock,
            "agent_version": p["agent_version"],
            "on_deploy": p["on_deploy"],
            "upgrade_requested": False,
            "metadata": jsonb(p["metadata"]) or {},
            "project_id": p["project_id"],
        }
        db.turns[(*key, p["turn_id"])] = turn
        data = canonical(
            {"input": turn["input"], "agent": turn["agent_name"], "by": turn["submitted_by"]}
        )
        (accepted,) = db.insert([db.event(p, head, p["turn_id"], "turn.accepted", data)])
        event = {"event_data": accepted["data"], "event_created_at": accepted["created_at"]}
    flags = {"busy": x_busy, "session_full": session_full, "tenant_full": tenant_full}
    return [{**turn, **event, **flags, "gone": gone}]


def _active(turn: Row) -> bool:
    return turn["state"] in _ACTIVE


def _alive(db: Tables, sess: Row) -> bool:
    """Not deleted, and not past its TTL (the upsert's guard)."""
    expires = sess["expires_at"]
    return sess["deleted_at"] is None and (expires is None or expires > db.clock)


def _expiry(db: Tables, ttl: int | None, p: Params) -> datetime | None:
    """``now() + coalesce(ttl, :default_ttl) * interval '1s'``."""
    secs = ttl if ttl is not None else p["default_ttl"]
    return None if secs is None else db.clock + timedelta(seconds=float(secs))


def _session_row(db: Tables, p: Params, head_seq: int = 1) -> Row:
    return {
        "tenant_id": p["tenant_id"],
        "session_id": p["session_id"],
        "agent_name": p["agent_name"],
        "fence": 0,
        "head_seq": head_seq,
        "earliest_seq": 1,
        "created_at": db.clock,
        "updated_at": db.clock,
        "forked_from_session": None,
        "forked_from_seq": None,
        "usage": {},
        "project_id": p["project_id"],
        "expires_after": p.get("expires_after"),
        "expires_at": _expiry(db, p.get("expires_after"), {"default_ttl": p.get("default_ttl")}),
        "deleted_at": None,
        "metadata": jsonb(p.get("session_metadata")) or {},
    }


def lock_session(db: Tables, p: Params) -> list[Row]:
    # the lock itself is the connector's: a transaction holds every table
    if db.session(p) is not None:
        return []
    db.sessions[(p["tenant_id"], p["session_id"])] = _session_row(db, p, head_seq=0)
    return [{"head_seq": 0}]


def _cancel(db: Tables, turn: Row) -> bool:
    """request_cancel's and interrupt_lane's ``t``: flag the turn, settle it when no
    worker steps it; whether it was settled."""
    settle = turn["state"] in _UNATTENDED
    db.update(
        turn,
        cancel_requested=True,
        state=CANCELLED if settle else turn["state"],
        revision=turn["revision"] + (1 if settle else 0),
        pending_input=None if settle else turn["pending_input"],
    )
    return settle


def _cancellable(turn: Row) -> bool:
    return (
        _active(turn)
        and moves(turn["state"], CANCELLED)
        and (not turn["cancel_requested"] or turn["state"] in _UNATTENDED)
    )


def interrupt_lane(db: Tables, p: Params) -> list[Row]:
    sess = db.session(p)
    lane = [t for t in db.lane(p["tenant_id"], p["session_id"]) if t["ordinal"] < p["ordinal"]]
    lane = [t for t in lane if _cancellable(t)]
    if sess is None or not lane:
        return []
    data, requested, cancelled = jsonb(p["data"]), [], []
    seq = int(sess["head_seq"])
    for turn in lane:  # seqs contiguous, in admission order
        settled = _cancel(db, turn)
        seq += 1
        requested.append(db.event(p, seq, turn["turn_id"], "turn.cancel_requested", data))
        if settled:
            seq += 1
            cancelled.append(db.event(p, seq, turn["turn_id"], "turn.cancelled", data))
    db.update(sess, head_seq=seq)
    return db.insert([*requested, *cancelled])


def insert_webhook(db: Tables, p: Params) -> list[Row]:
    key = (p["tenant_id"], p["session_id"], p["turn_id"])
    if key in db.webhooks:
        raise UniqueViolation('duplicate key value violates "pk_webhooks"')
    if key not in db.turns:
        raise ForeignKeyViolation('insert on "webhooks" violates "fk_webhooks_tenant_id"')
    row = {k: p[k] for k in ("tenant_id", "session_id", "turn_id", "run_id", "node_id", "url")} | {
        "secret_id": p["secret_id"],
        "delivery_id": p["delivery_id"],
        "attempts": 0,
        "next_attempt_at": db.clock,
        "claim": None,
        "last_status": None,
        "last_error": None,
        "delivered_at": None,
        "created_at": db.clock,
        "updated_at": db.clock,
        "connector": p.get("connector"),
        "target": None if p.get("target") is None else json.loads(p["target"]),
        "prompted": None,
    }
    db.webhooks[key] = row
    return [{"delivery_id": row["delivery_id"]}]


def claim_fence(db: Tables, p: Params) -> list[Row]:
    sess = db.session(p)
    if sess is None or not sess["fence"] < p["fence"]:
        return []
    sess["fence"] = p["fence"]  # the statement leaves updated_at
    return [{"fence": p["fence"]}]


def start_turn(db: Tables, p: Params) -> list[Row]:
    sess = db.session(p)
    if sess is None:  # cur: no session row, no row
        return []
    stored = int(sess["fence"])
    lane = db.lane(p["tenant_id"], p["session_id"])
    h = lane[0] if lane else None
    go = (
        h is not None
        and resumable(h)
        and h["agent_hash"] in p["agent_hashes"]
        and (h["state"] in _PARKED or h["attempt"] < p["max_attempts"])
    )
    s = stored < p["fence"] if p["claim"] else stored == p["fence"]
    t = go and s and h is not None and moves(h["state"], RUNNING)
    if go and s and not t:
        raise refuse()  # the session row would move but not the turn
    head: Row = dict(h) if h is not None else dict.fromkeys(TURN_COLUMNS)
    started: dict[str, Any] = dict.fromkeys(
        (
            "started_revision",
            "started_attempt",
            "started_cancel_requested",
            "started_seq",
            "started_data",
            "started_at",
        )
    )
    context: list[list[Any]] = []
    about: Row = {
        "warm": False,
        "base_seq": None,
        "whole": False,
        "window_full": False,
        "context_epoch": 0,
    }
    if s and go:
        db.update(sess, fence=p["fence"], head_seq=sess["head_seq"] + 1)
    elif s:
        sess["fence"] = p["fence"]  # a claim alone leaves updated_at
    if t and h is not None:
        # the context is the statement's snapshot: before this start's own writes
        context, about = start_context(db, p, h)
        inc = 0 if h["state"] in _PARKED else 1
        db.update(
            h,
            state=RUNNING,
            revision=h["revision"] + 1,
            attempt=h["attempt"] + inc,
            pending_input=None,
        )
        data = {"attempt": h["attempt"]}
        (e,) = db.insert(
            [db.event(p, sess["head_seq"], h["turn_id"], "turn.started", data, fence=p["fence"])]
        )
        started = {
            "started_revision": h["revision"],
            "started_attempt": h["attempt"],
            "started_cancel_requested": h["cancel_requested"],
            "started_seq": e["seq"],
            "started_data": e["data"],
            "started_at": e["created_at"],
        }
    return [{"stored_fence": stored, "claimed": s, **head, **started, "context": context, **about}]


def fenced_append(db: Tables, p: Params) -> list[Row]:
    sess, turn = db.session(p), db.turn(p)
    if (  # s: the fence, the revision, a declared transition
        sess is None
        or sess["fence"] != p["fence"]
        or turn is None
        or turn["revision"] != p["revision"]
        or not moves(turn["state"], p["state"])
    ):
        return []
    n = int(p["n_events"])
    head = int(sess["head_seq"]) + n
    rows = [db.event(p, head - n + 1, p["turn_id"], p["type"], jsonb(p["data"]), step=p["step"])]
    if n == 2:
        rows.append(db.event(p, head, p["turn_id"], p["then_type"], jsonb(p["then_data"])))
    for row in rows:
        row["fence"] = p["fence"]
    db.check_events(rows)  # e: one outcome per step, or nothing at all
    if p.get("provider_state") is not None:  # ps: beside the step's event, never in it
        key = (p["tenant_id"], p["session_id"], rows[0]["seq"])
        db.provider_state[key] = {"provider": p["provider"], "data": jsonb(p["provider_state"])}
    # nxt: the snapshot's lane, this turn aside
    nxt = [t for t in db.lane(p["tenant_id"], p["session_id"]) if t["turn_id"] != p["turn_id"]]
    usage = jsonb(p["usage"])
    session_usage, turn_usage = added_usage(sess["usage"], usage), added_usage(turn["usage"], usage)
    db.update(sess, head_seq=head, usage=session_usage)
    db.update(
        turn,
        state=p["state"],
        usage=turn_usage,
        revision=turn["revision"] + 1,
        attempt=turn["attempt"] + p["attempt_inc"],
        result=turn["result"] if p["result"] is None else jsonb(p["result"]),
        error=turn["error"] if p["error"] is None else jsonb(p["error"]),
        pending_input=jsonb(p["pending_input"]),
        agent_hash=turn["agent_hash"] if p["agent_hash"] is None else p["agent_hash"],
        agent_version=turn["agent_version"] if p["agent_version"] is None else p["agent_version"],
        upgrade_requested=turn["upgrade_requested"] and p["agent_hash"] is None,
    )
    settles = bool(p["settles"])
    hook = db.webhooks.get((p["tenant_id"], p["session_id"], p["turn_id"]))
    tail = {
        "turn_revision": turn["revision"],
        "turn_attempt": turn["attempt"],
        "turn_cancel_requested": turn["cancel_requested"],
        "lane_runnable": settles and bool(nxt) and resumable(nxt[0]),
        "webhook": settles and hook is not None and hook["delivered_at"] is None,
    }
    return [{**row, **tail} for row in db.insert(rows)]


def request_cancel(db: Tables, p: Params) -> list[Row]:
    sess, turn = db.session(p), db.turn(p)
    if sess is None or turn is None or not _cancellable(turn):
        return []
    data = jsonb(p["data"])
    settled = _cancel(db, turn)
    head = int(sess["head_seq"]) + (2 if settled else 1)
    db.update(sess, head_seq=head)
    rows = [db.event(p, head - (1 if settled else 0), p["turn_id"], "turn.cancel_requested", data)]
    if settled:
        rows.append(db.event(p, head, p["turn_id"], "turn.cancelled", data))
    return db.insert(rows)


def resolve_input(db: Tables, p: Params) -> list[Row]:
    sess, turn = db.session(p), db.turn(p)
    pending = None if turn is None else turn["pending_input"]
    if (
        sess is None
        or turn is None
        or not isinstance(pending, dict)
        or turn["state"] not in _PARKED
        or pending.get("request_id") != p["request_id"]
        or "resolved" in pending
        or "group" in pending
        or not (p["expired"] or _expires_after(pending.get("expires_at"), db.clock))
    ):
        return []
    response = jsonb(p["response"])
    answer = {
        "by": p["subject"],
        "resolved": True,
        "response": response,
        "response_hash": p["response_hash"],
    }
    db.update(turn, pending_input=canonical({**pending, **answer}), revision=turn["revision"] + 1)
    db.update(sess, head_seq=sess["head_seq"] + 1)
    data = {
        "request_id": p["request_id"],
        "kind": pending.get("kind"),
        "step": pending.get("step"),
        **{k: answer[k] for k in ("response", "response_hash", "by")},
    }
    return db.insert(
        [db.event(p, sess["head_seq"], p["turn_id"], "input.resolved", canonical(data))]
    )


def resolve_grouped(db: Tables, p: Params) -> list[Row]:
    """sql/waits.sql: answers to a group, by compare-and-swap on the turn's revision."""
    sess, turn = db.session(p), db.turn(p)
    if (
        sess is None
        or turn is None
        or turn["revision"] != p["revision"]
        or turn["state"] not in _PARKED
    ):
        return []
    db.update(turn, pending_input=jsonb(p["pending_input"]), revision=turn["revision"] + 1)
    n = int(p["n"])
    head = sess["head_seq"] + n
    db.update(sess, head_seq=head)
    resolved = jsonb(p["resolved"])
    return db.insert(
        [
            db.event(p, head - n + i, p["turn_id"], "input.resolved", canonical(r["data"]))
            for i, r in enumerate(resolved, start=1)
        ]
    )


def _expires_after(expires_at: Any, now: datetime) -> bool:
    """``CAST(pending_input ->> 'expires_at' AS timestamptz) > now()`` (NULL: false)."""
    if expires_at is None:
        return False
    at = datetime.fromisoformat(str(expires_at))
    return at > now


#: the statements of sql/turns.sql, by name
STATEMENTS: dict[str, Statement] = {
    "admit_turn": admit_turn,
    "lock_session": lock_session,
    "interrupt_lane": interrupt_lane,
    "insert_webhook": insert_webhook,
    "claim_fence": claim_fence,
    "start_turn": start_turn,
    "fenced_append": fenced_append,
    "request_cancel": request_cancel,
    "resolve_input": resolve_input,
    "resolve_grouped": resolve_grouped,
}
