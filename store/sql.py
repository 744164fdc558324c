"""Loads the named blocks of ``sql/*.sql`` once, renders their state sets from
``runtime/states.py`` and turns ``:name`` parameters into psycopg's ``%(name)s``.

Every SQL statement turnkeep runs is a named block in one of ``store/sql/*.sql`` (or
made from a template there, below), one file per concern of the store, beside the
module that runs it (``sql/turns.sql``: ``store/turns.py``). A block starts with
``-- name: NAME`` and a line saying why; a name is unique across the files. State
sets are never spelled out in a block: they are placeholders this module fills in
from ``runtime/states.py``, so the guards cannot drift from the declared state
machine:

- ``{active}``: every non-terminal state
- ``{runnable}``: states a worker can step without anyone's answer
- ``{parked}``: states parked on an input request (waiting, needs_reconciliation)
- ``{unattended}``: states no worker is stepping (queued and the parked ones)
- ``{to:STATE}``: the states TRANSITIONS allows to move to STATE
- ``{transitions}``: ``(VALUES (from, to), ...)``, every allowed transition, for
  statements whose target state is a parameter

A single state or event type written as a literal is checked against the enums by
tests/unit/test_queries.py.

SQL that several statements share is written once:

- ``-- fragment: NAME`` starts a block that is no statement of its own; a statement
  (or another fragment) says ``{fragment:NAME}`` where it goes, and ``source()`` has it
  written out there (a guard every statement of a concern repeats, the filters of the
  searches);
- ``-- template: NAME`` starts a statement's shape with slots (``{table}``), from
  which ``source()`` makes one statement per set of values ``_instances`` gives: the
  erasure's batches, one per table the registry names (store/erasure_registry.py
  ``generated``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from turnkeep.runtime.states import (
    ACTIVE_STATES,
    PARKED_STATES,
    RUNNABLE_STATES,
    TRANSITIONS,
    UNATTENDED_STATES,
    TurnState,
)
from turnkeep.store.erasure_registry import generated

_NAME = re.compile(r"^-- (name|fragment|template): (\w+)\s*$", re.MULTILINE)
_FRAGMENT = re.compile(r"\{fragment:(\w+)\}")
_SET = re.compile(r"\{(active|runnable|unattended|parked|transitions|to:(\w+))\}")
# ``:name`` but not a ``::type`` cast
_PARAM = re.compile(r"(?<![:\w]):(\w+)")


def _parse(
    source: str, into: dict[str, str] | None = None, shared: dict[str, str] | None = None
) -> dict[str, str]:
    """The statements (``-- name:``) of one file, added to ``into``, and its fragments
    and templates, to ``shared``; ValueError for a name already there."""
    parts = _NAME.split(source)
    # parts: [preamble, kind1, name1, body1, kind2, name2, body2, ...]
    blocks: dict[str, str] = {} if into is None else into
    pieces: dict[str, str] = {} if shared is None else shared
    for kind, name, body in zip(parts[1::3], parts[2::3], parts[3::3], strict=True):
        found = blocks if kind == "name" else pieces
        if name in found:
            raise ValueError(f"duplicate {kind} name {name!r}")
        lines = [ln for ln in body.strip().splitlines() if not ln.lstrip().startswith("--")]
        found[name] = "\n".join(lines).rstrip().rstrip(";")
    return blocks


def _expand(sql: str, shared: dict[str, str]) -> str:
    """``sql`` with each ``{fragment:NAME}`` written out (fragments within fragments
    too); KeyError for a fragment no file has."""
    for _ in range(8):
        if not _FRAGMENT.search(sql):
            return sql
        sql = _FRAGMENT.sub(lambda m: shared[m.group(1)], sql)
    raise ValueError(f"fragments nested too deep (or in a loop): {sql[:200]!r}")


def _fill(template: str, slots: Mapping[str, str]) -> str:
    """``template`` with each ``{slot}`` it names given its value; ValueError for a slot
    given that the template has not."""
    for slot, value in slots.items():
        if f"{{{slot}}}" not in template:
            raise ValueError(f"no slot {{{slot}}} in the template")
        template = template.replace(f"{{{slot}}}", value)
    return template


def _instances() -> list[tuple[str, str, dict[str, str]]]:
    """(statement, template, its slots' values) of the statements made from a
    template: the erase batches, one per table the erasure registry has one for."""
    return generated()


def _states(states: object) -> str:
    names = sorted(str(s) for s in states)  # type: ignore[attr-defined]
    return "(" + ", ".join(f"'{n}'" for n in names) + ")"


def allowed_from(target: TurnState) -> frozenset[TurnState]:
    """The states TRANSITIONS lets move to ``target``."""
    return frozenset(s for s, to in TRANSITIONS.items() if target in to)


def _transitions() -> str:
    pairs = sorted((str(a), str(b)) for a, to in TRANSITIONS.items() for b in to)
    return "(VALUES " + ", ".join(f"('{a}', '{b}')" for a, b in pairs) + ")"


def _render_sets(sql: str) -> str:
    def one(m: re.Match[str]) -> str:
        kind, target = m.group(1), m.group(2)
        if kind == "active":
            return _states(ACTIVE_STATES)
        if kind == "runnable":
            return _states(RUNNABLE_STATES)
        if kind == "unattended":
            return _states(UNATTENDED_STATES)
        if kind == "parked":
            return _states(PARKED_STATES)
        if kind == "transitions":
            return _transitions()
        return _states(allowed_from(TurnState(target)))

    return _SET.sub(one, sql)


def _code(line: str) -> str:
    """``line`` without its trailing ``--`` comment (one outside a string literal)."""
    quoted = False
    for i, ch in enumerate(line):
        if ch == "'":
            quoted = not quoted  # an escaped '' toggles twice
        elif not quoted and line.startswith("--", i):
            return line[:i]
    return line


def compact(sql: str) -> str:
    """The statement without comments, indentation or blank lines.

    Why: fewer bytes sent and prepared per statement (the comments are for readers of
    sql/*.sql)."""
    lines = (_code(line).strip() for line in sql.splitlines())
    return "\n".join(line for line in lines if line)


def render(sql: str) -> str:
    """A block with psycopg's named parameters: state sets filled in, ``%(name)s``
    parameters, compacted (what a reader compares; the store runs ``statement``)."""
    return _PARAM.sub(r"%(\1)s", compact(_render_sets(sql)).replace("%", "%%"))


@dataclass(frozen=True, slots=True)
class Statement:
    """A named statement as the driver runs it: Postgres' own ``$n`` parameters, so
    psycopg sends it as it is (a raw query: no conversion of ``%(name)s`` on each run,
    which it caches only for queries up to 4,096 bytes, and no length limit)."""

    name: str
    #: the compacted text, encoded
    text: bytes
    #: the parameter each ``$n`` is, in order
    params: tuple[str, ...]

    def args(self, values: Mapping[str, Any]) -> tuple[Any, ...]:
        """The ``$n`` values from the named ones; KeyError for one not given."""
        return tuple([values[name] for name in self.params])


def raw(sql: str) -> tuple[str, tuple[str, ...]]:
    """``sql`` with ``$n`` parameters, and the name each ``$n`` stands for."""
    order: dict[str, int] = {}

    def number(m: re.Match[str]) -> str:
        return f"${order.setdefault(m.group(1), len(order) + 1)}"

    text = _PARAM.sub(number, compact(_render_sets(sql)))
    return text, tuple(order)


#: the folder of the statements' files
SQL_DIR = Path(__file__).with_name("sql")


@cache
def source() -> dict[str, str]:
    """The statements as written in sql/*.sql, with their fragments written out and
    those made from a template (placeholders and ``:name`` kept)."""
    blocks: dict[str, str] = {}
    shared: dict[str, str] = {}
    for path in sorted(SQL_DIR.glob("*.sql")):
        _parse(path.read_text(), blocks, shared)
    for name, template, slots in _instances():
        if name in blocks:
            raise ValueError(f"duplicate query name {name!r} (made from {template})")
        blocks[name] = _fill(shared[template], slots)
    return {name: _expand(sql, shared) for name, sql in blocks.items()}


#: statements planned afresh on every run, never prepared (psycopg sends them unnamed,
#: so Postgres plans each with its parameters' values): the searches (sql/search.sql),
#: whose filters left NULL fold away only in a plan made for their values; a generic
#: plan of a prepared statement would keep every filter and walk no index for them
UNPREPARED = frozenset(
    {
        "search_turns",
        "search_turns_by_metadata",
        "search_sessions",
        "search_sessions_by_metadata",
    }
)


def prepare(name: str) -> bool | None:
    """psycopg's ``prepare`` for the statement: False for an ``UNPREPARED`` one, else
    None (prepared after a few runs on a connection)."""
    return False if name in UNPREPARED else None


@cache
def q(name: str) -> str:
    """The named statement with psycopg's named parameters; KeyError for a name in no
    sql/*.sql."""
    return render(source()[name])


@cache
def statement(name: str) -> Statement:
    """The named statement as the store runs it; KeyError for a name in no sql/*.sql."""
    text, params = raw(source()[name])
    return Statement(name, text.encode(), params)


def names() -> frozenset[str]:
    return frozenset(source())
