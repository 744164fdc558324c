"""A step's cost in a long session against a fresh one (issue 9): the worker's fixed
cost of a one-step turn (the start statement with its context, the transcript, the
fused settling step; bench/storeapi.py ``timed_turn``) in sessions of 10,000 prior
events whose newest compaction left eight turns after it, against fresh sessions
holding the same window (one summarised turn and the same eight after it), all
interleaved so they see the same machine. ``long_session_ratio`` is long / fresh
(goal <= 1.2): what the 10,000 events add, the context being equal. For scale,
``step_empty_p50_ms`` is the same in a session with no history at all.

The long sessions are written straight into the bench database (a few statements
each): completed one-step turns of four events (accepted, started, model, completed)
and a ``context.compacted`` eight turns from the head, as the worker's budgeted
compaction leaves a session that outgrew its model's context.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import psycopg

from bench.context import Run
from bench.harness import percentile, summary_ms
from bench.storeapi import timed_turn

PRIOR_EVENTS = 10_000
#: turns after the newest compaction: the window a budgeted context leaves
AFTER_BASE = 8


def _long_session(
    conn: psycopg.Connection[Any], tenant: str, sid: str, agent_hash: str, turns: int
) -> None:
    head = turns * 4 + 1
    p = {"t": tenant, "s": sid, "n": turns, "h": agent_hash}
    conn.execute(
        "INSERT INTO sessions (tenant_id, session_id, agent_name, head_seq)"
        " VALUES (%(t)s, %(s)s, 'demo', %(n)s * 4 + 1)",
        p,
    )
    conn.execute(
        """
        INSERT INTO turns (tenant_id, session_id, turn_id, state, agent_name, agent_hash,
                           input_hash, input, attempt, accepted_seq, result)
        SELECT %(t)s, %(s)s, 'old-' || i, 'completed', 'demo', %(h)s, 'x',
               jsonb_build_object('messages', jsonb_build_array(jsonb_build_object(
                   'role', 'user', 'content', 'What is the weather in Oslo? #' || i))),
               1, i * 4 + 1, jsonb_build_object('text', 'Oslo: 18C and sunny.')
        FROM generate_series(0, %(n)s - 1) i
        """,
        p,
    )
    conn.execute(
        """
        INSERT INTO events (tenant_id, session_id, seq, turn_id, type, step, fence, data)
        SELECT %(t)s, %(s)s, i * 4 + k, 'old-' || i,
               (ARRAY['turn.accepted', 'turn.started', 'model.completed',
                      'turn.completed'])[k],
               CASE WHEN k = 3 THEN 1 END, CASE WHEN k = 1 THEN 0 ELSE 1 END,
               CASE k
                 WHEN 1 THEN jsonb_build_object('input', jsonb_build_object('messages',
                      jsonb_build_array(jsonb_build_object('role', 'user',
                          'content', 'What is the weather in Oslo? #' || i))), 'agent', 'demo')
                 WHEN 2 THEN jsonb_build_object('attempt', 1)
                 WHEN 3 THEN jsonb_build_object('message', jsonb_build_object(
                      'role', 'assistant', 'content', 'Oslo: 18C and sunny.'),
                      'usage', jsonb_build_object('input_tokens', 40, 'output_tokens', 6))
                 ELSE jsonb_build_object('result', jsonb_build_object('text', 'Oslo: 18C.'))
               END
        FROM generate_series(0, %(n)s - 1) i, generate_series(1, 4) k
        """,
        p,
    )
    summary = {
        "summary": "The user asked about the weather in Oslo many times; it was 18C.",
        "from_seq": 1,
        "to_seq": (turns - AFTER_BASE) * 4,
        "supersedes": None,
    }
    conn.execute(
        "INSERT INTO events (tenant_id, session_id, seq, turn_id, type, fence, data)"
        " VALUES (%s, %s, %s, %s, 'context.compacted', 1, %s)",
        (tenant, sid, head, f"old-{turns - 1}", json.dumps(summary)),
    )


def run(r: Run) -> dict[str, Any]:
    c = r.c
    n = r.plan.long_sessions
    h = c.agent.definition_hash
    t = r.tenant("long")
    tag = uuid.uuid4().hex[:6]
    long_ids = [f"long-{i}-{tag}" for i in range(n)]
    fresh_ids = [f"fresh-{i}-{tag}" for i in range(n)]
    empty_ids = [f"empty-{i}-{tag}" for i in range(n)]
    with psycopg.connect(r.env.pg_url, autocommit=True) as conn:
        for sid in long_ids:
            _long_session(conn, t, sid, h, PRIOR_EVENTS // 4)
        for sid in fresh_ids:
            _long_session(conn, t, sid, h, AFTER_BASE + 1)
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
