"""Feedback in the store (the statements of sql/feedback.sql): a person's score of a
turn or of one of its steps, and the scores per version of an agent."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from turnkeep.store.db import Row
from turnkeep.store.statements import Statements


@dataclass(frozen=True)
class FeedbackRecord:
    tenant_id: str
    session_id: str
    turn_id: str
    step: int
    subject: str
    kind: str
    score: float
    scale_min: float
    scale_max: float
    note_hash: str | None
    note: str | None
    trace_id: str
    agent_name: str
    agent_version: str
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True)
class VersionScores:
    version: str
    count: int
    thumbs_up: int
    thumbs_down: int
    #: the mean score over each one's scale, 0 (its minimum) to 1 (its maximum)
    mean: float


def _record(row: Row) -> FeedbackRecord:
    return FeedbackRecord(**{k: row[k] for k in FeedbackRecord.__dataclass_fields__})


class FeedbackStatements(Statements):
    """``POST …/turns/{tid}/feedback`` and ``GET /v1/agents/{name}/feedback``."""

    def give_feedback(self, **given: Any) -> tuple[FeedbackRecord, bool]:
        """Record it, or replace its author's earlier one for the same (turn, step):
        (the feedback, whether it is new)."""
        row = self._one("give_feedback", given)
        assert row is not None  # an upsert answers its row
        return _record(row), bool(row["created"])

    def feedback_summary(self, tenant_id: str, agent_name: str) -> list[VersionScores]:
        rows = self._rows("feedback_summary", {"tenant_id": tenant_id, "agent_name": agent_name})
        return [
            VersionScores(
                version=str(r["agent_version"]),
                count=int(r["n"]),
                thumbs_up=int(r["up"]),
                thumbs_down=int(r["down"]),
                mean=float(r["mean"]),
            )
            for r in rows
        ]
