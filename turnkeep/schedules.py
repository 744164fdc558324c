"""The wire shapes of schedules (docs/flow-control.md): a schedule and a page of them.
Defined once, as turnkeep/models.py's are (the client parses answers with them;
api/http/bodies.py closes them for the OpenAPI document)."""

from __future__ import annotations

from typing import Any, Literal

from turnkeep.models import Instant, Wire


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
    at: Instant | None = None
    timezone: str
    input: list[dict[str, Any]]
    session_id: str | None = None
    missed: Literal["run_once", "skip"]
    paused: bool
    #: the refusal's code when a tick paused it (``creator_revoked``: its creator may no
    #: longer write; ``session_deleted``); null when its owner paused it, or it runs
    paused_reason: str | None = None
    next_at: Instant | None = None
    last_tick: Instant | None = None
    fired: int
    skipped: int = 0
    created_by: str
    created_at: Instant
    origin: dict[str, Any] | None = None


class SchedulePage(Wire):
    """``GET /v1/schedules``: by id; ``next`` is the ``after`` of the next page."""

    schedules: list[Schedule]
    next: str | None = None
