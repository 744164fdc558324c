"""``client.feedback``: a person's score of a turn or step, and its summary per agent
version (docs/evaluation.md). The calls are built here without I/O; ``FeedbackApi``
and ``AsyncFeedbackApi`` send them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from turnkeep.client import agents, calls
from turnkeep.client.calls import ApiCall, AsyncSend, Send
from turnkeep.feedback import Feedback, FeedbackSummary


def body(
    thumbs: str | None,
    score: float | None,
    scale: tuple[float, float] | None,
    step: int | None,
    note: str | None,
) -> dict[str, Any]:
    given = {"thumbs": thumbs, "score": score, "scale": scale, "step": step, "note": note}
    return {k: v for k, v in given.items() if v is not None}


def give(session_id: str, turn_id: str, given: Mapping[str, Any]) -> ApiCall[Feedback]:
    path = f"/v1/sessions/{session_id}/turns/{turn_id}/feedback"
    return ApiCall("POST", path, calls.reader(Feedback), json=dict(given))


def summary(agent: str) -> ApiCall[FeedbackSummary]:
    return ApiCall("GET", agents.path(agent, "/feedback"), calls.reader(FeedbackSummary))


class FeedbackApi:
    """``client.feedback`` of the sync client."""

    def __init__(self, send: Send) -> None:
        self._send = send

    def give(
        self,
        session_id: str,
        turn_id: str,
        *,
        thumbs: str | None = None,
        score: float | None = None,
        scale: tuple[float, float] | None = None,
        step: int | None = None,
        note: str | None = None,
    ) -> Feedback:
        """Score the turn (or its committed ``step``): ``thumbs`` "up"/"down", or a
        ``score`` on ``scale``; the note is kept as its hash. Again: replaces yours."""
        given = body(thumbs, score, scale, step, note)
        return self._send(give(session_id, turn_id, given))

    def summary(self, agent: str) -> FeedbackSummary:
        """The tenant's feedback on ``agent``, per version."""
        return self._send(summary(agent))


class AsyncFeedbackApi:
    """``client.feedback`` of the async client: ``FeedbackApi``'s methods, awaited."""

    def __init__(self, send: AsyncSend) -> None:
        self._send = send

    async def give(
        self,
        session_id: str,
        turn_id: str,
        *,
        thumbs: str | None = None,
        score: float | None = None,
        scale: tuple[float, float] | None = None,
        step: int | None = None,
        note: str | None = None,
    ) -> Feedback:
        given = body(thumbs, score, scale, step, note)
        return await self._send(give(session_id, turn_id, given))

    async def summary(self, agent: str) -> FeedbackSummary:
        return await self._send(summary(agent))
