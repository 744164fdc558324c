"""docs/guarantees.md names, for every guarantee, the tests that check it: each named
test (``tests/…/file.py::function``) must exist, so a renamed or deleted test cannot
leave a guarantee pointing at nothing."""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

from tests.parsing import parse_apart

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "guarantees.md"
#: a named test: a path under tests/ and, after ``::``, a function (a parametrised
#: one may carry its id in brackets, which is not part of the name)
TEST_REF = re.compile(r"`(tests/[\w/]+\.py)::(\w+)(?:\[[^\]`]*\])?`")
#: any backticked path under tests/, with or without a function
PATH_REF = re.compile(r"`(tests/[\w/.]+\.py)(?:::[^`]*)?`")


def _tables(text: str) -> list[list[list[str]]]:
    """Each run of consecutive ``|`` lines, as rows of stripped cells."""
    tables: list[list[list[str]]] = []
    run: list[list[str]] = []
    for line in [*text.splitlines(), ""]:
        if line.startswith("|"):
            run.append([c.strip() for c in line.strip().strip("|").split("|")])
        elif run:
            tables.append(run)
            run = []
    return tables


@cache
def _functions(path: str) -> frozenset[str]:
    """The test functions a file defines, at module level or in a class."""
    tree = parse_apart({path: str(ROOT / path)})[path]
    return frozenset(
        node.name
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.name.startswith("test_")
    )


def _checked_by_tables() -> list[list[list[str]]]:
    return [t for t in _tables(DOC.read_text()) if t[0][-1] == "checked by"]


def test_every_table_is_a_whole_table() -> None:
    # a row outside a table (below a paragraph) or with a cell too many or too few
    # renders as text, or puts its tests under another heading
    for table in _tables(DOC.read_text()):
        header, rule, *rows = table
        assert rule and all(re.fullmatch(r":?-{3,}:?", c) for c in rule), table[0]
        assert len(rule) == len(header), header
        for row in rows:
            assert len(row) == len(header), row[0]


def test_every_guarantee_names_a_test() -> None:
    tables = _checked_by_tables()
    assert [t[0][0] for t in tables] == ["guarantee", "statement"]
    for _, _, *rows in tables:
        for row in rows:
            assert TEST_REF.search(row[-1]), f"{row[0]!r} names no tests/…::test_…"
    guarantees = [row[0] for row in tables[0][2:]]
    assert len(guarantees) >= 20, guarantees
    assert "Only the lease holder writes" in guarantees
    assert "A cancellation never waits for a worker that is not there" in guarantees


def test_every_named_test_exists() -> None:
    text = DOC.read_text()
    named = TEST_REF.findall(text)
    assert len(named) >= 60, len(named)
    missing = [
        f"{path}::{name}"
        for path, name in named
        if not (ROOT / path).is_file() or name not in _functions(path)
    ]
    assert missing == []
    files = [path for path in PATH_REF.findall(text) if not (ROOT / path).is_file()]
    assert files == []


def test_the_parser_sees_a_missing_test_and_a_stray_row() -> None:
    ref = "`tests/unit/test_guarantees_doc.py::test_no_such_test`"
    path, name = TEST_REF.findall(ref)[0]
    assert name not in _functions(path)
    assert "test_every_named_test_exists" in _functions(path)
    stray = "| a | b | c |\n| --- | --- | --- |\n| one | two | three |\n\ntext\n\n| four | five |\n"
    assert [len(t) for t in _tables(stray)] == [3, 1]
