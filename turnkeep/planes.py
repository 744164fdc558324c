"""The wire shapes of what sits beside a turn: schedules, feedback, the inbox of open
requests, and a deleted session's tombstone. Defined once, as turnkeep/models.py's are
(the client parses answers with them; api/http/bodies.py closes them for the OpenAPI
document)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from turnkeep.models import PendingInput, TurnState, Wire


class Schedule(Wire):
    """A schedule: its agent's turn with ``input`` on every tick (``cron`` in
    ``timezone``, every ``every_seconds``, or once ``at`` a time), in ``session_id`` or
    a new session per tick; ``next_at`` is the tick it waits for (null: a one-shot that
    fired), ``fired`` how many turns it admitted, ``skipped`` how many ticks it passed
    over (more than the grace late, or their agent or session gone); ``origin`` the
    turn and step whose tool call asked for it (a follow-up turn), null for one made
    over the API."""

    schedule_id: str
    agent: str
    cron: str | None = None
    every_seconds: float | None = None
    at: datetime | None = None
    timezone: str
    input: list[dict[str, Any]]
    session_id: str | None = None
    missed: Literal["run_once", "skip"]
    paused: bool
    #: the refusal's code when a tick paused it (``creator_revoked``: its creator may no
    #: longer write; ``session_deleted``); null when its owner paused it, or it runs
    paused_reason: str | None = None
    next_at: datetime | None = None
    last_tick: datetime | None = None
    fired: int
    skipped: int = 0
    created_by: str
    created_at: datetime
    origin: dict[str, Any] | None = None


class SchedulePage(Wire):
    """``GET /v1/schedules``: by id; ``next`` is the ``after`` of the next page."""

    schedules: list[Schedule]
    next: str | None = None


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
    created_at: datetime
    updated_at: datetime


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


class InboxItem(Wire):
    """One open request the caller may answer: the turn it parks and the request, with
    its binding (``answered_by``) and expiry."""

    session_id: str
    turn_id: str
    agent: str
    state: TurnState
    request: PendingInput


class InboxPage(Wire):
    """``GET /v1/inbox?state=open``: by session and admission; ``next`` is the
    ``after`` of the next page (null: the last)."""

    inputs: list[InboxItem]
    next: str | None = None


class Tombstone(Wire):
    """What stays of a deleted session (``DELETE /v1/sessions/{sid}``, docs/erasure.md):
    who deleted it and when, ``reason`` ``deleted`` or ``expired`` (its TTL), and
    ``erased_at`` once everything it held is gone (null while its erasure runs);
    ``erased_rows`` counts the rows deleted so far."""

    session_id: str
    reason: Literal["deleted", "expired"]
    deleted_by: str | None = None
    deleted_at: datetime
    erased_at: datetime | None = None
    erased_rows: int


class TenantMaxRunning(Wire):
    """A tenant's max_running (docs/flow-control.md): at most this many of its turns
    running at once, the rest queued."""

    #: the tenant's own, declared with ``PUT /v1/limits``; None: it declared none
    max_running: int | None
    #: the one in force: the tenant's own, else the deployment's
    #: ``TURNKEEP_MAX_RUNNING_PER_TENANT``; None: no limit
    effective_max_running: int | None
    #: who declared it and when (None: never declared)
    updated_by: str | None = None
    updated_at: datetime | None = None
    #: whether the caller may declare them (``PUT /v1/limits``: a tenant's admin), so
    #: a client such as the console offers the change only to who may make it
    may_declare: bool = False
