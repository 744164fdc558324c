"""The wire shapes of feedback: a person's score of a turn's step, and an agent's by
version. Defined once, as turnkeep/models.py's are (the client parses answers with them;
api/http/bodies.py closes them for the OpenAPI document)."""

from __future__ import annotations

from typing import Literal

from turnkeep.models import Instant, Wire


class Feedback(Wire):
    """A person's score of a turn (``step`` null) or of one of its committed steps:
    ``kind`` thumbs (1 up, 0 down, on [0, 1]) or score (on ``scale``); the note as its
    hash; the turn's trace id and the agent version it ran on."""

    session_id: str
    turn_id: str
    step: int | None = None
    subject: str
    kind: Literal["thumbs", "score"]
    score: float
    scale: list[float]
    note_hash: str | None = None
    trace_id: str
    agent: str
    agent_version: str | None = None
    created_at: Instant
    updated_at: Instant


class VersionFeedback(Wire):
    """The feedback on one version of an agent."""

    version: str | None = None
    count: int
    thumbs_up: int
    thumbs_down: int
    #: the mean score over each one's scale: 0 its lowest, 1 its highest
    mean_score: float


class FeedbackSummary(Wire):
    """``GET /v1/agents/{name}/feedback``: the tenant's feedback per version."""

    agent: str
    versions: list[VersionFeedback]
