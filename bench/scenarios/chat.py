"""A realistic chat (issue 23): a one-step turn in a session of hundreds of earlier
short turns, no compaction, against the same turn in a fresh session."""

from __future__ import annotations

from typing import Any

from bench.context import Run


def run(r: Run) -> dict[str, Any]:
    return {"not_run": "the chat scenario is not built yet"}
