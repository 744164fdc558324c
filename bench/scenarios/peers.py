"""Peers in the same run (issue 23): the same K-step no-op job on LangGraph with its
Postgres checkpointer, on DBOS, and as a turnkeep turn of K steps. Needs the
``bench`` extra; without it the scenario says it was not run."""

from __future__ import annotations

from typing import Any

from bench.context import Run


def run(r: Run) -> dict[str, Any]:
    return {"not_run": "the peers scenario is not built yet"}
