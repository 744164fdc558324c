"""The statements of sql/reads.sql, sql/tool_steps.sql and sql/memory.sql, answered
in memory: sessions, turns and journal pages; a tool call's recorded steps; facts
remembered and recalled."""

from __future__ import annotations

from typing import Any

from turnkeep.store.db import Row
from turnkeep.store.testing.tables import (
    CONVERSATION_TYPES,
    EVENT_COLUMNS,
    TURN_COLUMNS,
    Params,
    Statement,
    Tables,
    jsonb,
)


def get_session(db: Tables, p: Params) -> list[Row]:
    sess = db.session(p)
    return [] if sess is None else [sess]


def get_tombstone(db: Tables, p: Params) -> list[Row]:
    found = db.tombstones.get((p["tenant_id"], p["session_id"]))
    return [] if found is None else [found]


def read_provider_state(db: Tables, p: Params) -> list[Row]:
    """sql/provider_state.sql: a provider's state of the model calls at :seqs."""
    key = (p["tenant_id"], p["session_id"])
    found = [(seq, db.provider_state.get((*key, seq))) for seq in sorted(p["seqs"])]
    return [
        {"seq": seq, "data": row["data"]}
        for seq, row in found
        if row is not None and row["provider"] == p["provider"]
    ]


def get_turn(db: Tables, p: Params) -> list[Row]:
    turn = db.turn(p)
    return [] if turn is None else [turn]


def _turns(db: Tables, p: Params) -> list[Row]:
    key = (p["tenant_id"], p["session_id"])
    mine = (t for (tid, sid, _), t in db.turns.items() if (tid, sid) == key)
    return sorted(mine, key=lambda t: int(t["ordinal"]))


def list_turns(db: Tables, p: Params) -> list[Row]:
    return _turns(db, p)


def turn_page(db: Tables, p: Params) -> list[Row]:
    if db.session(p) is None:
        return []
    older = [t for t in reversed(_turns(db, p)) if t["ordinal"] < p["before"]][: p["limit"]]
    page = [{"sid": p["session_id"], **t} for t in older]
    return page or [{"sid": p["session_id"], **dict.fromkeys(TURN_COLUMNS)}]


def lane_head(db: Tables, p: Params) -> list[Row]:
    return db.lane(p["tenant_id"], p["session_id"])[:1]


def turn_events(db: Tables, p: Params) -> list[Row]:
    journal = db.journal(p["tenant_id"], p["session_id"])
    return [e for e in journal if e["turn_id"] == p["turn_id"]]


def _page(db: Tables, p: Params, types: frozenset[str] | None) -> list[Row]:
    sess = db.session(p)
    if sess is None:
        return []
    journal = db.journal(p["tenant_id"], p["session_id"])
    events = [e for e in journal if e["seq"] > p["after"] and (types is None or e["type"] in types)]
    expires = sess["expires_at"]
    bounds = {
        "head_seq": sess["head_seq"],
        "earliest_seq": sess["earliest_seq"],
        "session_deleted_at": sess["deleted_at"],
        "session_expires_at": expires,
        "session_expired": None if expires is None else expires <= db.clock,
    }
    empty: Row = dict.fromkeys((*EVENT_COLUMNS, "created_at"))
    return [{**bounds, **e} for e in events[: p["limit"]]] or [{**bounds, **empty}]


def list_events(db: Tables, p: Params) -> list[Row]:
    return _page(db, p, None)


def list_conversation(db: Tables, p: Params) -> list[Row]:
    return _page(db, p, CONVERSATION_TYPES)


# -- sql/tool_steps.sql ------------------------------------------------------------


def _step_key(p: Params) -> tuple[str, str, str, int, str]:
    return (p["tenant_id"], p["session_id"], p["turn_id"], p["step"], p["name"])


def get_tool_step(db: Tables, p: Params) -> list[Row]:
    row = db.tool_steps.get(_step_key(p))
    return [] if row is None else [row]


def record_tool_step(db: Tables, p: Params) -> list[Row]:
    key = _step_key(p)
    if key in db.tool_steps:  # ON CONFLICT DO NOTHING: the first writer won
        return []
    row: dict[str, Any] = {
        **dict(zip(("tenant_id", "session_id", "turn_id", "step", "name"), key, strict=True)),
        "result": jsonb(p["result"]),
        "created_at": db.clock,
    }
    db.tool_steps[key] = row
    return [row]


# -- sql/memory.sql ---------------------------------------------------------------


def remember_fact(db: Tables, p: Params) -> list[Row]:
    key = (p["tenant_id"], p["scope_key"], p["source_key"])
    if key in db.memories:  # a rerun of the writing call
        return []
    row = {
        k: p[k] for k in ("tenant_id", "scope_key", "source_key", "fact", "session_id", "turn_id")
    }
    db.memories[key] = row = {**row, "created_at": db.clock}
    return [row]


def recall_facts(db: Tables, p: Params) -> list[Row]:
    facts = [
        m
        for m in db.memories.values()
        if m["tenant_id"] == p["tenant_id"]
        and m["scope_key"] == p["scope_key"]
        and m["created_at"] < p["before"]
    ]
    facts.sort(key=lambda m: (m["created_at"], m["source_key"]), reverse=True)
    return facts[: p["limit"]]


#: the statements of sql/reads.sql, sql/tool_steps.sql and sql/memory.sql, by name
STATEMENTS: dict[str, Statement] = {
    "get_session": get_session,
    "get_tombstone": get_tombstone,
    "read_provider_state": read_provider_state,
    "get_turn": get_turn,
    "list_turns": list_turns,
    "turn_page": turn_page,
    "lane_head": lane_head,
    "list_events": list_events,
    "turn_events": turn_events,
    "list_conversation": list_conversation,
    "get_tool_step": get_tool_step,
    "record_tool_step": record_tool_step,
    "remember_fact": remember_fact,
    "recall_facts": recall_facts,
}
