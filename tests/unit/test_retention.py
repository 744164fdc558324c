"""Journal retention's statements against the declared sets and the projection: the
prune keeps every active turn's events by the ``{active}`` placeholder, reads the
conversation by the same event types the worker's window does, deletes from
``events`` only, and never moves ``earliest_seq`` backwards."""

from __future__ import annotations

import re

from turnkeep.runtime.journal import CONVERSATION_EVENTS
from turnkeep.runtime.settings import Settings
from turnkeep.store.sql import q, source

_LITERAL = re.compile(r"'([^']*)'")


def _type_lists(sql: str) -> list[set[str]]:
    return [set(_LITERAL.findall(m)) for m in re.findall(r"type IN \(([^)]*)\)", sql)]


def test_the_conversation_reads_list_exactly_the_conversation_events():
    want = {t.value for t in CONVERSATION_EVENTS}
    for name in ("list_conversation", "prune_events"):
        lists = _type_lists(source()[name])
        assert lists and all(found == want for found in lists), name


def test_the_prune_keeps_active_turns_by_the_declared_set_and_deletes_only_events():
    src = source()["prune_events"]
    assert "state IN {active}" in src
    assert "'queued'" in q("prune_events") and "'completed'" not in q("prune_events")
    # events, and the recorded tool steps of ended turns past the grace: nothing else
    assert re.findall(r"DELETE FROM (\w+)", src) == ["events", "tool_steps"]
    assert "t.state NOT IN {active}" in src and ":steps_grace" in src
    assert not re.search(r"(UPDATE|DELETE FROM) turns", src)
    # earliest_seq only goes up; pruning is not journal progress (the scan's updated_at)
    assert "GREATEST(sessions.earliest_seq, cut.hi)" in src
    assert re.findall(r"\bUPDATE (\w+) SET (\w+)", src) == [("sessions", "earliest_seq")]
    assert "sessions.updated_at" not in src
    # the compaction window: the newest context.compacted and what follows its to_seq
    assert "type = 'context.compacted'" in src and "'to_seq'" in src


def test_the_defaults_the_worker_and_the_prune_share():
    from turnkeep.store.retention import TOOL_STEPS_GRACE
    from turnkeep.store.statements import CONTEXT_WINDOW_ROWS

    s = Settings()
    assert s.retention.events == 20_000
    assert s.retention.context_window_rows == CONTEXT_WINDOW_ROWS == 2000
    assert s.retention.batch == 5000
    assert s.retention.tool_steps_grace == TOOL_STEPS_GRACE == 86_400.0
    assert s.sse.backlog > 0
