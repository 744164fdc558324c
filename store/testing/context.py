"""start_turn's context, answered in memory (sql/turns.sql ``base``, ``win``, ``ctx``):
the conversation of earlier turns a turn starts from, and every event of its own.
Always the whole window: memory keeps no context epoch, so a worker's cached window
(store/context_cache.py) is never found to hold here (never ``warm``)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from turnkeep.runtime.states import EventType
from turnkeep.store.db import Row
from turnkeep.store.testing.tables import CONVERSATION_TYPES, Params, Tables, context_size


def start_context(db: Tables, p: Params, h: Row) -> tuple[list[list[Any]], Row]:
    """start_turn's ``base``, ``win`` and ``ctx``: the newest compaction, the earlier
    turns' inputs and outcomes after what it covers (newest kept, bounded in rows and
    bytes), then every event of this turn; by turn, then seq. With the row's columns
    about the window (``warm``, ``base_seq``, ``whole``, ``context_epoch``)."""
    journal = db.journal(p["tenant_id"], p["session_id"])
    whole = True
    if isinstance(h["input"], dict) and "delegation" in h["input"]:
        whole = False
        # kid: a delegated child's conversation is its own task alone
        journal = [e for e in journal if e["turn_id"] == h["turn_id"]]
    rerun = h["input"].get("rerun") if isinstance(h["input"], dict) else None
    if isinstance(rerun, dict) and rerun.get("before_seq") is not None:
        # a rerun's conversation is the one its source saw
        before = int(rerun["before_seq"])
        whole = False
        journal = [e for e in journal if e["seq"] < before or e["turn_id"] == h["turn_id"]]
    compactions = [e for e in journal if e["type"] == EventType.CONTEXT_COMPACTED.value]
    base = compactions[-1] if compactions else None
    after = 0
    if base is not None:
        to_seq = base["data"].get("to_seq") if isinstance(base["data"], dict) else None
        after = int(to_seq) if to_seq is not None else int(base["seq"]) - 1
    earlier = [
        e
        for e in reversed(journal)
        if e["seq"] > after
        and e["turn_id"] != h["turn_id"]
        and e["type"] in CONVERSATION_TYPES
        and not (e["type"] == EventType.TURN_ACCEPTED.value and e["seq"] > h["accepted_seq"])
    ][: int(p["window_rows"])]
    ordinals = {
        tid: t["ordinal"]
        for (tenant, sid, tid), t in db.turns.items()
        if (tenant, sid) == (p["tenant_id"], p["session_id"])
    }
    window: list[tuple[float, int, Row]] = []
    upto = 0
    for e in earlier:  # newest first, as the running sum is taken
        upto += context_size(e["data"])
        if upto <= int(p["window_bytes"]):
            ordinal = ordinals.get(e["turn_id"])
            # (a NULL ordinal sorts last, as ORDER BY puts it)
            window.append((float("inf") if ordinal is None else ordinal, e["seq"], e))
    if base is not None and base["turn_id"] != h["turn_id"]:
        window.append((-1, base["seq"], base))
    window += [(h["ordinal"], e["seq"], e) for e in journal if e["turn_id"] == h["turn_id"]]
    window.sort(key=lambda x: (x[0], x[1]))
    about = {
        "warm": False,
        "base_seq": None if base is None else base["seq"],
        "whole": whole,
        "window_full": False,
        "context_epoch": 0,
    }
    return [_as_json(e, o) for o, _, e in window], about


def _as_json(e: Row, ordinal: float) -> list[Any]:
    """An event as ``json_build_array`` aggregates it: seq, turn_id, type, step, fence,
    data, created_at (as ISO text), its turn's ordinal, its stored bytes."""
    created: datetime = e["created_at"]
    return [
        e["seq"],
        e["turn_id"],
        e["type"],
        e["step"],
        e["fence"],
        e["data"],
        created.isoformat(),
        None if ordinal == float("inf") else int(ordinal),
        context_size(e["data"]),
    ]
