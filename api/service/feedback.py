"""Feedback: a person's score of a turn or of one of its steps (docs/evaluation.md).

Authenticated and bound: to the token's tenant and subject, the turn, the step (one
whose outcome the turn committed; none: the whole turn) and the turn's trace id, with
the agent and version the turn ran on. One per (turn, step, subject), replaced by its
author. The note is never stored, only its hash (and, where the operator allows it,
``TURNKEEP_FEEDBACK_KEEP_NOTES``, a redacted copy). A score is a thumb, or a number on
the scale the request declares."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from turnkeep.api.auth import Principal
from turnkeep.api.errors import RequestInvalid
from turnkeep.api.resources import ApiResources
from turnkeep.api.service.access import may_write, visible
from turnkeep.api.service.requests import NO_NUL
from turnkeep.runtime.hashing import sha256_hex
from turnkeep.runtime.obs import redact, tracing
from turnkeep.runtime.states import OUTCOME_EVENTS
from turnkeep.store.feedback import FeedbackRecord, VersionScores


class FeedbackRequest(BaseModel):
    """``POST /v1/sessions/{sid}/turns/{tid}/feedback``: exactly one of ``thumbs`` and
    ``score``."""

    model_config = ConfigDict(extra="forbid")

    thumbs: Literal["up", "down"] | None = None
    score: float | None = Field(default=None, allow_inf_nan=False)
    #: the scale ``score`` is on, [lowest, highest]
    scale: tuple[float, float] = (1.0, 5.0)
    #: the step scored (its outcome committed); absent: the whole turn
    step: int | None = Field(default=None, ge=1, le=1_000_000)
    note: str | None = Field(default=None, max_length=2000, pattern=NO_NUL)

    @model_validator(mode="after")
    def _one(self) -> FeedbackRequest:
        if (self.thumbs is None) == (self.score is None):
            raise ValueError("give exactly one of thumbs and score")
        low, high = self.scale
        if not low < high:
            raise ValueError("scale: the lowest must be below the highest")
        if self.score is not None and not low <= self.score <= high:
            raise ValueError(f"score: must be on the scale [{low:g}, {high:g}]")
        return self


def feedback_json(f: FeedbackRecord) -> dict[str, Any]:
    return {
        "session_id": f.session_id,
        "turn_id": f.turn_id,
        "step": f.step or None,
        "subject": f.subject,
        "kind": f.kind,
        "score": f.score,
        "scale": [f.scale_min, f.scale_max],
        "note_hash": f.note_hash,
        "trace_id": f.trace_id,
        "agent": f.agent_name,
        "agent_version": f.agent_version or None,
        "created_at": f.created_at.isoformat(),
        "updated_at": f.updated_at.isoformat(),
    }


def give(
    services: ApiResources, principal: Principal, sid: str, tid: str, body: FeedbackRequest
) -> tuple[FeedbackRecord, bool]:
    """(the feedback, whether it is new rather than its author's replacement)."""
    may_write(principal)
    visible(services, principal, sid, missing="turn not found")
    turn = services.store.reads.get_turn(principal.tenant, sid, tid)
    if body.step is not None:
        steps = {
            e.step
            for e in services.store.reads.turn_events(principal.tenant, sid, tid)
            if e.type in OUTCOME_EVENTS and e.step is not None
        }
        if body.step not in steps:
            raise RequestInvalid("body.step", f"the turn has no committed step {body.step}")
    low, high = (0.0, 1.0) if body.thumbs is not None else body.scale
    score = (1.0 if body.thumbs == "up" else 0.0) if body.thumbs is not None else body.score
    note = body.note
    keep = services.settings.feedback.keep_notes and note is not None
    trace_id, _ = tracing.turn_ids(principal.tenant, sid, tid)
    return services.store.feedback.give_feedback(
        tenant_id=principal.tenant,
        session_id=sid,
        turn_id=tid,
        step=body.step or 0,
        subject=principal.subject,
        kind="thumbs" if body.thumbs is not None else "score",
        score=score,
        scale_min=low,
        scale_max=high,
        note_hash=None if note is None else sha256_hex(note),
        note=redact.current().redact_text(note) if keep and note is not None else None,
        trace_id=format(trace_id, "032x"),
        agent_name=turn.agent_name,
        agent_version=turn.agent_version,
    )


def summary(services: ApiResources, principal: Principal, agent: str) -> dict[str, Any]:
    """The tenant's feedback on ``agent``, per version (UnknownAgent: 422)."""
    services.registry.get(agent)
    rows: list[VersionScores] = services.store.feedback.feedback_summary(principal.tenant, agent)
    return {
        "agent": agent,
        "versions": [
            {
                "version": r.version or None,
                "count": r.count,
                "thumbs_up": r.thumbs_up,
                "thumbs_down": r.thumbs_down,
                "mean_score": round(r.mean, 6),
            }
            for r in rows
        ],
    }
