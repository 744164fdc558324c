"""store/sql/*.sql against the declared state machine: every state set is rendered
from runtime/states.py, and every literal a statement compares with is a state or
an event type the enums declare, so the SQL cannot drift from the Python."""

from __future__ import annotations

import re

import pytest

from turnkeep.runtime.states import (
    ACTIVE_STATES,
    RUNNABLE_STATES,
    TRANSITIONS,
    EventType,
    TurnState,
)
from turnkeep.store.sql import allowed_from, q, render, source, statement

_LITERAL = re.compile(r"'([^']*)'")
#: literals that are neither states nor event types: JSON keys of pending_input and
#: jsonb_build_object, and the '[]' of an empty aggregate
_OTHER = {
    "resolved",
    "to_seq",
    "response_hash",
    "kind",
    "step",
    "request_id",
    "expires_at",
    "response",
    "by",
    "input",
    "agent",
    "attempt",
    "[]",
    # an empty object and a second, in admit_turn (metadata none; a TTL's interval)
    "{}",
    "1s",
    # what the erasure scrubs of an experiment's case result (scrub_eval_results)
    "assertions",
    "{assertions}",
    '{"detail": ""}',
    '$.assertions[*] ? (@.detail != "")',
    '{"reason": null}',
    "reason",
    # a delegation request (runtime/delegation.py): its kind and where its children are
    "delegation",
    "detail",
    "children",
    "session_id",
    "turn_id",
    # a rerun's lineage (runtime/reruns.py): where the context of its source ends
    "{rerun,before_seq}",
    # approvals asked together (runtime/input_groups.py): a group's requests
    "group",
    # the sequence of sessions' context epochs (store/context_cache.py), nextval'd by
    # prune_events and tombstone_session
    "session_context_epochs",
    # feedback's kinds (api/service/feedback.py)
    "thumbs",
    # a turn's error's code, searched by (sql/search.sql)
    "code",
    # the namespace of max_running's advisory lock (store/max_running.py)
    "turnkeep.max_running:",
}


def test_every_literal_is_a_declared_state_or_event_type_or_a_known_key():
    states = {s.value for s in TurnState}
    types = {t.value for t in EventType}
    for name, sql in source().items():
        for literal in _LITERAL.findall(sql):
            assert literal in states | types | _OTHER, (name, literal)


def test_state_sets_are_written_as_placeholders_never_spelled_out():
    # a hand-written IN list of states would drift from TRANSITIONS; only {…} sets
    state_list = re.compile(r"IN \(\s*'(" + "|".join(s.value for s in TurnState) + r")'")
    for name, sql in source().items():
        assert not state_list.search(sql), name


def test_rendered_sets_follow_the_state_machine():
    sql = render("{active} {runnable} {to:running} {transitions}")
    assert all(f"'{s.value}'" in sql.split("(VALUES")[0] for s in ACTIVE_STATES)
    pairs = set(re.findall(r"\('(\w+)', '(\w+)'\)", sql.split("(VALUES", 1)[1]))
    assert pairs == {(a.value, b.value) for a, to in TRANSITIONS.items() for b in to}
    assert allowed_from(TurnState.RUNNING) == {
        TurnState.QUEUED,
        TurnState.RUNNING,
        TurnState.WAITING,
        TurnState.NEEDS_RECONCILIATION,
    }
    assert RUNNABLE_STATES <= ACTIVE_STATES
    assert not any(allowed_from(s) & {TurnState.COMPLETED} for s in TurnState)


@pytest.mark.parametrize("name", sorted(source()))
def test_every_statement_renders_with_no_placeholder_or_colon_parameter_left(name: str):
    sql = q(name)
    assert "{" not in sql or "'{" in sql, sql
    assert not re.search(r"(?<![:\w]):[a-z_]+", sql), sql


def test_the_fenced_writes_guard_their_target_state_by_the_declared_transitions():
    assert "(VALUES" in q("fenced_append")
    start = q("start_turn")
    assert "state IN ('needs_reconciliation', 'queued', 'running', 'waiting')" in start


def test_the_state_table_in_the_docs_names_statements_that_exist():
    from pathlib import Path

    from turnkeep.store.sql import names

    doc = (Path(__file__).resolve().parents[2] / "docs" / "turn-states.md").read_text()
    table = [ln for ln in doc.splitlines() if ln.startswith("| ")][2:]
    named = set()
    for line in table:
        who = line.split("|")[3]
        named |= set(re.findall(r"\(`(\w+)`", who)) | set(re.findall(r"`(\w+)`\)", who))
    assert named, "the table names no statement"
    assert named <= names(), named - names()
    assert {"admit_turn", "start_turn", "fenced_append", "request_cancel", "resolve_input"} <= named


def test_the_start_statement_reads_exactly_the_events_the_conversation_is_made_of():
    from turnkeep.runtime.journal import CONVERSATION_EVENTS

    sql = source()["start_turn"]
    listed = re.search(r"ev\.type IN \(([^)]*)\)", sql)
    assert listed is not None
    assert set(_LITERAL.findall(listed.group(1))) == {t.value for t in CONVERSATION_EVENTS}


def test_the_lane_statements_of_double_texting_guard_by_the_declared_sets():
    # interrupt_lane cancels like request_cancel: unattended turns at once, a running
    # one by request, never a terminal one; its sets are placeholders, never spelled
    src = source()["interrupt_lane"]
    assert {"{unattended}", "{active}", "{to:cancelled}"} <= set(re.findall(r"\{[\w:]+\}", src))
    sql = q("interrupt_lane")
    assert "state IN ('needs_reconciliation', 'queued', 'waiting')" in sql
    assert "'completed'" not in sql and "'failed'" not in sql
    # admit_turn refuses a new turn id under :reject while any active turn exists
    assert "state IN {active}) AS busy" in source()["admit_turn"]
    # lock_session locks (or creates) the session row and changes no existing one
    assert "DO UPDATE SET head_seq = cur.head_seq WHERE false" in q("lock_session")


@pytest.mark.parametrize("name", sorted(source()))
def test_every_statement_runs_raw_with_its_parameters_numbered(name: str):
    # the store sends each statement as psycopg's raw query ($n parameters): nothing is
    # converted per execution, so no statement depends on the size of the driver's
    # cache of %(name)s conversions (4,096 bytes, which admit_turn was 10 bytes under)
    st = statement(name)
    text = st.text.decode()
    named = dict.fromkeys(re.findall(r"%\((\w+)\)s", q(name)))
    assert st.params == tuple(named), name
    numbers = {int(n) for n in re.findall(r"\$(\d+)", text)}
    assert numbers == set(range(1, len(st.params) + 1)), name
    assert "%(" not in text and "--" not in text
    assert not any(line != line.strip() for line in text.splitlines())
    assert st.args({p: i for i, p in enumerate(st.params)}) == tuple(range(len(st.params)))


def test_a_parameter_named_twice_is_one_number_and_a_missing_one_a_key_error():
    from turnkeep.store.sql import Statement, raw

    text, params = raw("SELECT :a, :b::text, :a WHERE x::int = :b")
    assert (text, params) == ("SELECT $1, $2::text, $1 WHERE x::int = $2", ("a", "b"))
    with pytest.raises(KeyError):
        Statement("s", text.encode(), params).args({"a": 1})


def test_compacting_drops_comments_outside_string_literals_only():
    from turnkeep.store.sql import compact

    sql = "SELECT 'a -- b' AS x, -- a comment\n    'it''s' -- another\n  -- whole line\nFROM t"
    assert compact(sql) == "SELECT 'a -- b' AS x,\n'it''s'\nFROM t"


def test_shared_sql_is_written_out_where_it_is_named():
    from turnkeep.store.sql import _expand, _fill, _parse

    shared: dict[str, str] = {}
    blocks = _parse(
        "-- fragment: inner\n-- why\n1;\n\n-- fragment: outer\nx = {fragment:inner}\n\n"
        "-- template: shape\nDELETE FROM {table} WHERE {fragment:outer};\n\n"
        "-- name: stmt\nSELECT 2 WHERE {fragment:outer};\n",
        shared=shared,
    )
    assert set(blocks) == {"stmt"} and set(shared) == {"inner", "outer", "shape"}
    assert _expand(blocks["stmt"], shared) == "SELECT 2 WHERE x = 1"
    made = _fill(shared["shape"], {"table": "t"})
    assert _expand(made, shared) == "DELETE FROM t WHERE x = 1"
    with pytest.raises(KeyError):
        _expand("{fragment:nowhere}", shared)
    with pytest.raises(ValueError, match="no slot"):
        _fill(shared["shape"], {"tabel": "t"})
    for name, sql in source().items():
        assert "{fragment:" not in sql, name


def test_each_table_erased_by_batches_has_its_statement_made_from_the_one_shape():
    from turnkeep.store.erasure_registry import Kind, holders

    batched = [h for h in holders(Kind.TABLE) if h.batched is not None]
    assert len(batched) >= 10
    for h in batched:
        [part] = h.parts
        sql = source()[part.value]
        # the table's rows of the session, and only those, at most :batch of them
        assert sql.count(f" FROM {h.name}\n") == 2, (part, sql)
        assert sql.count("WHERE tenant_id = :tenant_id AND session_id = :session_id") == 4
        assert "LIMIT :batch))" in sql and "FOR UPDATE" in sql
        assert sql.endswith("SELECT count(*) AS deleted FROM d")
    events = source()["erase_events"]
    assert "ORDER BY seq LIMIT :batch" in events
    assert source()["erase_followups"].count("AND origin IS NOT NULL") == 2
