"""A realistic chat (issue 23): a one-step turn in a session of hundreds of earlier
short turns, no compaction, against the same turn in a fresh session.

Each chat session is written straight into the bench database (tests/journals.py
``chat_journal``): ``Plan.chat_turns`` completed turns of six events (accepted,
started, a model call asking for a tool, its result, the answer, completed), four
conversation rows each, short messages, so nothing is ever compacted: 600 turns are
3,600 events and 2,400 conversation rows, more than the store's context window
(``CONTEXT_WINDOW_ROWS``, 2,000 rows, TURNKEEP_CONTEXT_WINDOW_ROWS), which is then
full. The fresh sessions have no history at all. Both are timed worker-side with
bench/storeapi.py ``timed_turn(request=True)`` (the start statement with its window,
the transcript, the model request built and its tokens estimated, the settle),
interleaved so they see the same machine.

A chat goes on turn after turn, so each chat session has two turns queued: the first
is run (and timed as ``cold``: the window read whole, as by a worker that never ran
the session) just before the one timed as ``chat``, by the same Store, as a worker
takes a chat's next turn (its window kept between them: store/context_cache.py).

``chat_window_turn_ratio`` is chat / fresh (goal <= 3); ``context_message_us`` is
what the runtime spends per message of the window: (chat p50 - fresh p50) / the
messages the chat's transcript held (``chat_context_messages``).
"""

from __future__ import annotations

import statistics
import uuid
from typing import Any

import psycopg

from bench.context import Run
from bench.harness import percentile, summary_ms
from bench.storeapi import timed_turn
from tests.journals import chat_journal


def run(r: Run) -> dict[str, Any]:
    c, n, turns = r.c, r.plan.chat_sessions, r.plan.chat_turns
    h = c.agent.definition_hash
    t = r.tenant("chat")
    tag = uuid.uuid4().hex[:6]
    chat_ids = [f"chat-{i}-{tag}" for i in range(n)]
    fresh_ids = [f"chatfresh-{i}-{tag}" for i in range(n)]
    for sid in chat_ids:
        chat_journal(r.env.pg_url, t, sid, turns, agent="demo", agent_hash=h)
    with psycopg.connect(r.env.pg_url, autocommit=True) as conn:
        conn.execute("ANALYZE events")
        conn.execute("ANALYZE turns")
        conn.execute("ANALYZE sessions")
    for sid in chat_ids + fresh_ids:
        c.admit(t, sid, enqueue=False)
    for sid in chat_ids:  # the chat's next turn: the one timed
        c.admit(t, sid, enqueue=False)
    timed: dict[str, list[float]] = {"chat": [], "fresh": [], "cold": []}
    seen: dict[str, list[int]] = {"chat": [], "fresh": [], "cold": []}
    for i in range(n):  # interleaved: both see the same machine
        seconds = timed_turn(
            c.store, t, chat_ids[i], fence=10_000 + i, agent_hash=h, request=True, seen=seen["cold"]
        )
        timed["cold"].append(seconds)
        for j, (kind, ids) in enumerate((("fresh", fresh_ids), ("chat", chat_ids))):
            seconds = timed_turn(
                c.store,
                t,
                ids[i],
                fence=20_000 * (j + 1) + i,
                agent_hash=h,
                request=True,
                seen=seen[kind],
            )
            timed[kind].append(seconds)
    warm = max(1, n // 5)  # the first few open connections and prepare statements
    chat, fresh, cold = timed["chat"][warm:], timed["fresh"][warm:], timed["cold"][warm:]
    chat_ms, fresh_ms = 1000.0 * percentile(chat, 50), 1000.0 * percentile(fresh, 50)
    messages = statistics.median(seen["chat"])
    r.figures["chat_turn_p50_ms"] = chat_ms
    r.figures["chat_fresh_p50_ms"] = fresh_ms
    r.figures["chat_context_messages"] = messages
    if messages:
        r.figures["context_message_us"] = 1000.0 * (chat_ms - fresh_ms) / messages
    return {
        "sessions": n,
        "earlier_turns": turns,
        "events_per_session": 6 * turns,
        "conversation_rows_per_session": 4 * turns,
        "context_messages": messages,
        "fresh_messages": statistics.median(seen["fresh"]),
        "chat": summary_ms(chat),
        "fresh": summary_ms(fresh),
        "cold": summary_ms(cold),
    }
