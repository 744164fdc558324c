"""The in-memory store (store/testing/) as a store: what it answers, what it refuses to
pretend, and its transactions. Its behaviour statement by statement is held to
Postgres by tests/contract/."""

from __future__ import annotations

from dataclasses import fields
from typing import Any

import pytest

from turnkeep.runtime.demo import AGENTS
from turnkeep.runtime.multitask import Multitask
from turnkeep.store.errors import SessionBusy
from turnkeep.store.facade import Store
from turnkeep.store.new_turn import Bounds, NewTurn
from turnkeep.store.sql import names
from turnkeep.store.testing import STATEMENTS, InMemoryConnector, in_memory_store

AGENT = AGENTS[0]


def _admit(store: Store, turn_id: str, **kw: Any) -> None:
    bounds = Bounds(**{f.name: kw.pop(f.name) for f in fields(Bounds) if f.name in kw})
    new = NewTurn(
        tenant_id="t",
        session_id="s",
        turn_id=turn_id,
        agent_name=AGENT.name,
        agent_hash=AGENT.definition_hash,
        input_hash=turn_id,
        input={"messages": []},
        **kw,
    )
    store.turns.admit(new, bounds)


def test_it_answers_statements_of_the_sql_files_only_and_the_executors_all():
    assert set(STATEMENTS) <= names()
    executor = {"start_turn", "fenced_append", "get_turn", "turn_events", "get_session"}
    api = {"admit_turn", "lock_session", "interrupt_lane", "request_cancel", "resolve_input"}
    tools = {"get_tool_step", "record_tool_step", "remember_fact", "recall_facts"}
    assert executor | api | tools <= set(STATEMENTS)


def test_a_statement_it_does_not_answer_is_named_in_a_not_implemented_error():
    store = in_memory_store()
    with pytest.raises(NotImplementedError, match="'list_sessions'"):
        store.reads.list_sessions("t", subject="x", limit=10)
    with pytest.raises(NotImplementedError, match=r"'no_such_statement' \(no statement of"):
        InMemoryConnector().rows("no_such_statement", {}, tenant="t")


def test_a_transaction_that_raises_leaves_the_tables_as_they_were():
    store = in_memory_store()
    _admit(store, "u1")
    connector = store.connector
    assert isinstance(connector, InMemoryConnector)
    tables = connector.tables
    # multitask=reject: lock_session and admit_turn ran (admit_turn took a seq), then
    # the busy lane refused and the transaction rolled back
    with pytest.raises(SessionBusy):
        _admit(store, "u2", multitask=Multitask.REJECT)
    assert connector.tables is tables
    assert tables.sessions[("t", "s")]["head_seq"] == 1
    assert set(tables.turns) == {("t", "s", "u1")}


def test_rows_are_copies_a_caller_cannot_change_the_store_through():
    store = in_memory_store()
    _admit(store, "u1")
    turn = store.reads.get_turn("t", "s", "u1")
    turn.input["messages"].append({"role": "user", "content": "smuggled"})
    assert store.reads.get_turn("t", "s", "u1").input == {"messages": []}
