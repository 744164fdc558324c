"""docs/architecture.md names only what exists: every backticked path (a file or a
folder of the repository, a test as ``path::name``) is there, so the newcomer's page
cannot drift from the house silently."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "architecture.md"
#: a backticked path: a folder ending in / or a file with an extension, maybe ::test
PATH = re.compile(r"`([A-Za-z_][\w./-]*(?:/|\.(?:py|sql|md|js|ts|toml))(?:::\w+)?)`")


def paths(text: str) -> list[str]:
    return [p for p in PATH.findall(text) if "<" not in p]


def missing(text: str) -> list[str]:
    gone = []
    for found in paths(text):
        path, _, test = found.partition("::")
        target = ROOT / path
        if not target.exists() or (test and f"def {test}(" not in target.read_text()):
            gone.append(found)
    return gone


def test_every_path_the_page_names_exists() -> None:
    named = paths(PAGE.read_text())
    assert len(named) > 50  # the page names the house, not a handful of files
    assert missing(PAGE.read_text()) == []


def test_a_missing_path_or_test_is_seen() -> None:
    text = "`worker/lane.py` `worker/gone.py` `store/sql/` `tests/unit/test_plan.py::nope`"
    assert paths(text) == [
        "worker/lane.py",
        "worker/gone.py",
        "store/sql/",
        "tests/unit/test_plan.py::nope",
    ]
    assert missing(text) == ["worker/gone.py", "tests/unit/test_plan.py::nope"]
    assert paths("`admit_turn` `POST /v1/x` `store/sql/<concern>.sql`") == []
