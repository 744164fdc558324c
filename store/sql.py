"""Loads the named blocks of ``queries.sql`` once, as compiled ``text()`` clauses."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

from sqlalchemy import TextClause, text

_NAME = re.compile(r"^-- name: (\w+)\s*$", re.MULTILINE)


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


@cache
def _queries() -> dict[str, str]:
    return _parse((Path(__file__).with_name("queries.sql")).read_text())


@cache
def q(name: str) -> TextClause:
    """The named statement; KeyError for a name that is not in queries.sql."""
    return text(_queries()[name])


def names() -> frozenset[str]:
    return frozenset(_queries())
