"""A step's cost in a long session against a fresh one (issue 9): the worker's fixed
cost of a one-step turn (the start statement with its context, the transcript, the
fused settling step; bench/storeapi.py ``timed_turn``) in sessions of 10,000 prior
events whose newest compaction left eight turns after it, against fresh sessions
holding the same window (one summarised turn and the same eight after it), all
interleaved so they see the same machine. ``long_session_ratio`` is long / fresh
(goal <= 1.2): what the 10,000 events add, the context being equal. For scale,
``step_empty_p50_ms`` is the same in a session with no history at all.

The long sessions are written straight into the bench database (a few statements
each, with tests/journals.py): completed one-step turns of four events (accepted,
started, model, completed) and a ``context.compacted`` eight turns from the head,
as the worker's budgeted compaction leaves a session that outgrew its model's
context.
"""

from __future__ import annotations

import uuid
from typing import Any

import psycopg

from bench.context import Run
from bench.harness import percentile, summary_ms
from bench.storeapi import timed_turn
from tests.journals import append_compaction, long_journal

PRIOR_EVENTS = 10_000
#: turns after the newest compaction: the window a budgeted context leaves
AFTER_BASE = 8


def _long_session(pg_url: str, tenant: str, sid: str, agent_hash: str, turns: int) -> None:
    """``turns`` completed demo turns and a compaction ``AFTER_BASE`` turns from the
    head, written as the tests write theirs (tests/journals.py)."""
    head = long_journal(pg_url, tenant, sid, turns, agent="demo", agent_hash=agent_hash)
    append_compaction(pg_url, tenant, sid, to_seq=head - 4 * AFTER_BASE)


def run(r: Run) -> dict[str, Any]:
    c = r.c
    n = r.plan.long_sessions
    h = c.agent.definition_hash
    t = r.tenant("long")
    tag = uuid.uuid4().hex[:6]
    long_ids = [f"long-{i}-{tag}" for i in range(n)]
    fresh_ids = [f"fresh-{i}-{tag}" for i in range(n)]
    empty_ids = [f"empty-{i}-{tag}" for i in range(n)]
    for sid in long_ids:
        _long_session(r.env.pg_url, t, sid, h, PRIOR_EVENTS // 4)
    for sid in fresh_ids:
        _long_session(r.env.pg_url, t, sid, h, AFTER_BASE + 1)
    with psycopg.connect(r.env.pg_url, autocommit=True) as conn:
        conn.execute("ANALYZE events")
        conn.execute("ANALYZE turns")
        conn.execute("ANALYZE sessions")
    for sid in long_ids + fresh_ids + empty_ids:
        c.admit(t, sid, enqueue=False)
    timed: dict[str, list[float]] = {"long": [], "fresh": [], "empty": []}
    for i in range(n):  # interleaved: all see the same machine
        for j, (kind, ids) in enumerate(
            (("fresh", fresh_ids), ("long", long_ids), ("empty", empty_ids))
        ):
            seconds = timed_turn(c.store, t, ids[i], fence=10_000 * (j + 1) + i, agent_hash=h)
            timed[kind].append(seconds)
    warm = n // 5  # the first few open connections and prepare statements
    fresh, long, empty = (timed[k][warm:] for k in ("fresh", "long", "empty"))
    r.figures["step_fresh_p50_ms"] = 1000.0 * percentile(fresh, 50)
    r.figures["step_10k_events_p50_ms"] = 1000.0 * percentile(long, 50)
    r.figures["step_empty_p50_ms"] = 1000.0 * percentile(empty, 50)
    return {
        "sessions": n,
        "prior_events": PRIOR_EVENTS,
        "turns_after_base": AFTER_BASE,
        "fresh_same_window": summary_ms(fresh),
        "long": summary_ms(long),
        "empty": summary_ms(empty),
    }
