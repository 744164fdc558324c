"""Long journals written straight into the database, for the tests (and the bench)
that need sessions of thousands of events: a few statements each, seq contiguous
from 1 and head_seq in step, as the store would have left them; and the rows a
statement reads of them (``explain_rows``)."""

from __future__ import annotations

import json
import os
from typing import Any

import psycopg

#: one completed turn: two conversation rows (its input, its answer) in four events
PLAIN = ("turn.accepted", "turn.started", "model.completed", "turn.completed")
#: one completed turn that asked a question first: two conversation rows in six events
ASKED = (
    "turn.accepted",
    "turn.started",
    "input.requested",
    "input.resolved",
    "model.completed",
    "turn.completed",
)


def long_journal(
    database_url: str,
    tenant: str,
    sid: str,
    turns: int,
    *,
    agent: str = "demo",
    agent_hash: str = "x",
    kinds: tuple[str, ...] = PLAIN,
) -> int:
    """A session of ``turns`` completed turns (``kinds`` are each one's events), in
    three statements: seq contiguous from 1, head_seq in step. Returns the head."""
    n = len(kinds)
    head = turns * n
    with psycopg.connect(_pg(database_url), autocommit=True) as conn:
        conn.execute(
            "INSERT INTO sessions (tenant_id, session_id, agent_name, head_seq, fence)"
            " VALUES (%(t)s, %(s)s, %(a)s, %(h)s, 1)",
            {"t": tenant, "s": sid, "a": agent, "h": head},
        )
        conn.execute(
            """
            INSERT INTO turns (tenant_id, session_id, turn_id, state, agent_name, agent_hash,
                               input_hash, input, attempt, accepted_seq, result)
            SELECT %(t)s, %(s)s, 'old-' || i, 'completed', %(a)s, %(h)s, 'x',
                   jsonb_build_object('messages', jsonb_build_array(
                       jsonb_build_object('role', 'user', 'content', 'question ' || i))),
                   1, i * %(n)s + 1, jsonb_build_object('text', 'answer ' || i)
            FROM generate_series(0, %(turns)s - 1) i
            """,
            {"t": tenant, "s": sid, "a": agent, "h": agent_hash, "n": n, "turns": turns},
        )
        conn.execute(
            """
            INSERT INTO events (tenant_id, session_id, seq, turn_id, type, step, fence, data)
            SELECT %(t)s, %(s)s, i * %(n)s + k, 'old-' || i, (%(kinds)s::text[])[k],
                   CASE WHEN (%(kinds)s::text[])[k] = 'model.completed' THEN 1 END,
                   CASE WHEN k = 1 THEN 0 ELSE 1 END,
                   CASE (%(kinds)s::text[])[k]
                     WHEN 'turn.accepted' THEN jsonb_build_object('input', jsonb_build_object(
                          'messages', jsonb_build_array(jsonb_build_object(
                              'role', 'user', 'content', 'question ' || i))))
                     WHEN 'model.completed' THEN jsonb_build_object('message',
                          jsonb_build_object('role', 'assistant', 'content', 'answer ' || i))
                     WHEN 'turn.completed' THEN jsonb_build_object('result',
                          jsonb_build_object('text', 'answer ' || i))
                     ELSE jsonb_build_object('n', i)
                   END
            FROM generate_series(0, %(turns)s - 1) i, generate_series(1, %(n)s) k
            """,
            {"t": tenant, "s": sid, "n": n, "turns": turns, "kinds": list(kinds)},
        )
    return head


#: one completed chat turn that called a tool: four conversation rows (its input, the
#: call, the result, the answer) in six events
CHAT = (
    "turn.accepted",
    "turn.started",
    "model.completed",
    "tool.completed",
    "model.completed",
    "turn.completed",
)


def chat_journal(
    database_url: str,
    tenant: str,
    sid: str,
    turns: int,
    *,
    agent: str = "demo",
    agent_hash: str = "x",
) -> int:
    """A chat of ``turns`` completed turns of short messages (``CHAT``: a question, a
    tool call, its result, the answer; steps 1-3), no compaction. Returns the head."""
    n = len(CHAT)
    # long_journal's session and turns, its events replaced by the chat's (one outcome
    # per step: the constraint would refuse long_journal's two model steps of step 1)
    head = long_journal(
        database_url, tenant, sid, turns, agent=agent, agent_hash=agent_hash, kinds=CHAT[:1]
    )
    with psycopg.connect(_pg(database_url), autocommit=True) as conn:
        conn.execute(
            "UPDATE sessions SET head_seq = %(h)s WHERE tenant_id = %(t)s AND session_id = %(s)s",
            {"t": tenant, "s": sid, "h": turns * n},
        )
        conn.execute(
            "UPDATE turns SET accepted_seq = (accepted_seq - 1) * %(n)s + 1"
            " WHERE tenant_id = %(t)s AND session_id = %(s)s",
            {"t": tenant, "s": sid, "n": n},
        )
        conn.execute(
            "DELETE FROM events WHERE tenant_id = %(t)s AND session_id = %(s)s",
            {"t": tenant, "s": sid},
        )
        conn.execute(
            """
            INSERT INTO events (tenant_id, session_id, seq, turn_id, type, step, fence, data)
            SELECT %(t)s, %(s)s, i * %(n)s + k, 'old-' || i, (%(kinds)s::text[])[k],
                   CASE k WHEN 3 THEN 1 WHEN 4 THEN 2 WHEN 5 THEN 3 END,
                   CASE WHEN k = 1 THEN 0 ELSE 1 END,
                   CASE k
                     WHEN 1 THEN jsonb_build_object('input', jsonb_build_object(
                          'messages', jsonb_build_array(jsonb_build_object(
                              'role', 'user', 'content', 'question ' || i))))
                     WHEN 3 THEN jsonb_build_object('message', jsonb_build_object(
                          'role', 'assistant', 'content', 'Let me look that up.',
                          'tool_calls', jsonb_build_array(jsonb_build_object(
                              'id', 'call_' || i, 'name', 'get_weather',
                              'arguments', jsonb_build_object('city', 'Oslo')))))
                     WHEN 4 THEN jsonb_build_object('message', jsonb_build_object(
                          'role', 'tool', 'tool_call_id', 'call_' || i,
                          'name', 'get_weather', 'content', '{"temp_c": 4}'))
                     WHEN 5 THEN jsonb_build_object('message',
                          jsonb_build_object('role', 'assistant', 'content', 'answer ' || i))
                     WHEN 6 THEN jsonb_build_object('result',
                          jsonb_build_object('text', 'answer ' || i))
                     ELSE jsonb_build_object('attempt', 1)
                   END
            FROM generate_series(0, %(turns)s - 1) i, generate_series(1, %(n)s) k
            """,
            {"t": tenant, "s": sid, "n": n, "turns": turns, "kinds": list(CHAT)},
        )
    assert head == turns
    return turns * n


def append_compaction(database_url: str, tenant: str, sid: str, to_seq: int) -> int:
    """A context.compacted summarising seq 1..to_seq, appended at the head; its seq."""
    with psycopg.connect(_pg(database_url), autocommit=True) as conn:
        row = conn.execute(
            "UPDATE sessions SET head_seq = head_seq + 1"
            " WHERE tenant_id = %s AND session_id = %s RETURNING head_seq",
            (tenant, sid),
        ).fetchone()
        assert row is not None
        seq = int(row[0])
        conn.execute(
            "INSERT INTO events (tenant_id, session_id, seq, turn_id, type, fence, data)"
            " VALUES (%s, %s, %s, 'old-0', 'context.compacted', 1, %s)",
            (tenant, sid, seq, json.dumps({"summary": "S", "from_seq": 1, "to_seq": to_seq})),
        )
    return seq


def explain_rows(conn: psycopg.Connection[Any], sql: str, params: dict[str, Any]) -> int:
    """Rows the plan read from ``events`` (returned plus filtered out), by EXPLAIN
    ANALYZE inside a transaction that is rolled back."""
    if os.environ.get("SHOW_PLAN"):
        for r in conn.execute("EXPLAIN (ANALYZE) " + sql, params).fetchall():
            print(r[0])
        conn.rollback()
    plan = conn.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + sql, params).fetchone()[0]
    total = 0

    def walk(node: dict[str, Any]) -> None:
        nonlocal total
        if node.get("Relation Name") == "events":
            loops = node.get("Actual Loops", 1)
            read = node.get("Actual Rows", 0) + node.get("Rows Removed by Filter", 0)
            total += read * loops
        for child in node.get("Plans", []):
            walk(child)

    walk(plan[0]["Plan"])
    return total


def _pg(url: str) -> str:
    return url.replace("postgresql+psycopg://", "postgresql://", 1)
