"""Loads the named blocks of ``queries.sql`` once, renders their state sets from
``runtime/states.py`` and turns ``:name`` parameters into psycopg's ``%(name)s``."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

from runtime.states import (
    ACTIVE_STATES,
    PARKED_STATES,
    RUNNABLE_STATES,
    TRANSITIONS,
    UNATTENDED_STATES,
    TurnState,
)

_NAME = re.compile(r"^-- name: (\w+)\s*$", re.MULTILINE)
_SET = re.compile(r"\{(active|runnable|unattended|parked|transitions|to:(\w+))\}")
# ``:name`` but not a ``::type`` cast
_PARAM = re.compile(r"(?<![:\w]):(\w+)")


def _parse(source: str) -> dict[str, str]:
    parts = _NAME.split(source)
    # parts: [preamble, name1, body1, name2, body2, ...]
    blocks: dict[str, str] = {}
    for name, body in zip(parts[1::2], parts[2::2], strict=True):
        if name in blocks:
            raise ValueError(f"duplicate query name {name!r}")
        lines = [ln for ln in body.strip().splitlines() if not ln.lstrip().startswith("--")]
        blocks[name] = "\n".join(lines).rstrip().rstrip(";")
    return blocks


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

    Why: psycopg caches a query's parsing only up to 4,096 bytes
    (``MAX_CACHED_STATEMENT_LENGTH``); as written, with their comments, ``start_turn``
    and ``fenced_append`` were over it and were parsed again on every step, 6% of a
    worker's CPU in a drain (``python -m bench --only noop turns --py-spy``)."""
    lines = (_code(line).strip() for line in sql.splitlines())
    return "\n".join(line for line in lines if line)


def render(sql: str) -> str:
    """A block as the driver runs it: state sets filled in, ``%(name)s`` parameters,
    compacted."""
    return _PARAM.sub(r"%(\1)s", compact(_render_sets(sql)).replace("%", "%%"))


@cache
def source() -> dict[str, str]:
    """The blocks as written in queries.sql (placeholders and ``:name`` kept)."""
    return _parse((Path(__file__).with_name("queries.sql")).read_text())


@cache
def q(name: str) -> str:
    """The named statement, ready for psycopg; KeyError for a name not in queries.sql."""
    return render(source()[name])


def names() -> frozenset[str]:
    return frozenset(source())
