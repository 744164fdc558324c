"""The JSON bodies the API answers, as the OpenAPI document states them (and only that).

The shapes are defined once, in turnkeep/models.py (open models: the client parses
answers with them). Here is the document's view: closed subclasses of those models, so
the document says exactly what a route answers, and the few bodies only HTTP answers
(a workflow node, health, readiness, the problem). The routes build their bodies as
dicts (api/service/wire.py, the service's reads) and return them as they are: these
models never validate or serialize a response. A field added to a body without its
model shows up in tests/integration/test_openapi.py. Free-form parts (a turn's result
and error, an event's data) stay open objects.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from turnkeep import erasure, feedback, inbox, max_running, models, schedules
from turnkeep.runtime.states import EventType, TurnState


class _Closed(BaseModel):
    model_config = ConfigDict(extra="forbid")


# The bodies the client parses too: their fields are defined once, in turnkeep/models.py;
# here they are closed, so the document says exactly what a route answers. A nested
# field is narrowed to the closed model (list is invariant to mypy, hence the ignores;
# pydantic validates and documents the narrowed type).


class PendingInput(models.PendingInput):
    __doc__ = models.PendingInput.__doc__


class Held(models.Held, _Closed):
    __doc__ = models.Held.__doc__


class Paced(models.Paced, _Closed):
    __doc__ = models.Paced.__doc__


class RerunOf(models.RerunOf, _Closed):
    __doc__ = models.RerunOf.__doc__


class Turn(models.Turn, _Closed):
    __doc__ = models.Turn.__doc__
    pending_input: PendingInput | None = None
    pending_inputs: list[PendingInput] = []  # type: ignore[assignment]
    held: Held | None = None
    paced: Paced | None = None
    rerun_of: RerunOf | None = None


class VersionRef(models.VersionRef, _Closed):
    __doc__ = models.VersionRef.__doc__


class DeclaredVersion(models.DeclaredVersion, _Closed):
    __doc__ = models.DeclaredVersion.__doc__


class AgentInfo(models.AgentInfo, _Closed):
    __doc__ = models.AgentInfo.__doc__
    latest: VersionRef
    default: VersionRef
    versions: list[DeclaredVersion]  # type: ignore[assignment]


class AgentList(models.AgentList, _Closed):
    __doc__ = models.AgentList.__doc__
    agents: list[AgentInfo]  # type: ignore[assignment]


class LiveWorker(models.LiveWorker, _Closed):
    __doc__ = models.LiveWorker.__doc__


class DefinitionUse(models.DefinitionUse, _Closed):
    __doc__ = models.DefinitionUse.__doc__
    workers: list[LiveWorker] = []  # type: ignore[assignment]


class AgentVersions(models.AgentVersions, _Closed):
    __doc__ = models.AgentVersions.__doc__
    versions: list[DefinitionUse]  # type: ignore[assignment]


class TurnUpgrade(models.TurnUpgrade, _Closed):
    __doc__ = models.TurnUpgrade.__doc__


class VersionUpgrade(models.VersionUpgrade, _Closed):
    __doc__ = models.VersionUpgrade.__doc__


class Session(models.Session, _Closed):
    __doc__ = models.Session.__doc__


class SessionPage(models.SessionPage, _Closed):
    __doc__ = models.SessionPage.__doc__
    sessions: list[Session]  # type: ignore[assignment]


class TurnPage(models.TurnPage, _Closed):
    __doc__ = models.TurnPage.__doc__
    turns: list[Turn]  # type: ignore[assignment]


class Event(models.Event, _Closed):
    __doc__ = models.Event.__doc__
    #: the persisted names (runtime/states.py): the document lists them, so a typed
    #: client (clients/typescript) knows each one
    type: EventType


class EventPage(models.EventPage, _Closed):
    __doc__ = models.EventPage.__doc__
    events: list[Event]  # type: ignore[assignment]


class Message(models.Message):
    __doc__ = models.Message.__doc__


class MessagePage(models.MessagePage, _Closed):
    __doc__ = models.MessagePage.__doc__
    messages: list[Message]  # type: ignore[assignment]


class Attempt(models.Attempt, _Closed):
    __doc__ = models.Attempt.__doc__


class Wait(models.Wait, _Closed):
    __doc__ = models.Wait.__doc__


class Step(models.Step, _Closed):
    __doc__ = models.Step.__doc__


class Timeline(models.Timeline, _Closed):
    __doc__ = models.Timeline.__doc__
    turn: Turn
    attempts: list[Attempt]  # type: ignore[assignment]
    steps: list[Step]  # type: ignore[assignment]
    waits: list[Wait]  # type: ignore[assignment]


class ForkedFrom(models.ForkedFrom, _Closed):
    __doc__ = models.ForkedFrom.__doc__


class Fork(models.Fork, _Closed):
    __doc__ = models.Fork.__doc__
    forked_from: ForkedFrom


class Attachment(models.Attachment, _Closed):
    __doc__ = models.Attachment.__doc__


class Project(models.Project, _Closed):
    __doc__ = models.Project.__doc__


class ProjectPage(models.ProjectPage, _Closed):
    __doc__ = models.ProjectPage.__doc__
    projects: list[Project]  # type: ignore[assignment]


class Webhook(_Closed):
    """The completion webhook of a workflow node and its delivery."""

    url: str
    delivery_id: str
    status: Literal["pending", "delivered"]
    attempts: int
    delivered_at: datetime | None
    next_attempt_at: datetime | None
    last_status: int | None
    last_error: str | None


class Node(_Closed):
    """A workflow node as its turn stands."""

    run_id: str
    node_id: str
    session_id: str
    turn_id: str
    state: Literal["running", "waiting", "done"]
    turn_state: TurnState
    pending_input: PendingInput | None = None
    result: dict[str, Any] | None
    error: dict[str, Any] | None
    agent: str
    created_at: datetime
    updated_at: datetime
    webhook: Webhook | None


class StreamToken(models.StreamToken, _Closed):
    __doc__ = models.StreamToken.__doc__


# The data of an event stream's frames that are not committed events (api/sse.py builds
# them; tests/unit/test_stream_frames.py holds them to these models). No route answers
# them as JSON: api/openapi.py adds them to the document's schemas.


class Delta(models.Delta, _Closed):
    __doc__ = models.Delta.__doc__


class StreamResume(_Closed):
    """``event: stream.resume``, a stream's final frame when its reader fell too far
    behind the live channel: reconnect with ``Last-Event-ID: <after>``, the last seq it
    delivered."""

    reason: Literal["lagging"]
    after: int


class StreamResyncRequired(_Closed):
    """``event: stream.resync_required``, a stream's final frame when the retention cut
    passed its position while it caught up: rebuild from the turns, then follow on from
    ``earliest - 1`` (as for a 410 ``resync_required``)."""

    requested: int
    earliest: int
    latest: int


#: the models of the frames above, by the name the document gives them
STREAM_FRAMES: tuple[type[BaseModel], ...] = (Delta, StreamResume, StreamResyncRequired)


class Health(_Closed):
    status: Literal["ok"]


class Checks(_Closed):
    postgres: Literal["ok", "failed"]
    redis: Literal["ok", "failed"]


class Ready(_Closed):
    status: Literal["ready"]
    checks: Checks


class Problem(BaseModel):
    """An RFC 9457 problem (``application/problem+json``): every error the API answers.
    ``code`` is stable; some codes add fields (listed, all optional). The body never
    carries tenant data, ids, tokens or request input."""

    type: str = Field(pattern=r"^urn:turnkeep:problem:[a-z_]+$")
    title: str
    status: int
    code: str = Field(pattern=r"^[a-z_]+$")
    detail: str
    #: validation_error: where and what, never the input
    errors: list[dict[str, Any]] | None = None
    #: cursor_ahead
    cursor: int | None = None
    head_seq: int | None = None
    #: resync_required
    requested: int | None = None
    earliest: int | None = None
    latest: int | None = None
    #: quota_exceeded: the quota's scope and bound
    quota: str | None = None
    limit: int | None = None
    #: session_deleted: when, and when its erasure finished (null: under way)
    deleted_at: datetime | None = None
    erased_at: datetime | None = None
    #: a failed readiness check
    checks: Checks | None = None


class Schedule(schedules.Schedule, _Closed):
    __doc__ = schedules.Schedule.__doc__


class SchedulePage(schedules.SchedulePage, _Closed):
    __doc__ = schedules.SchedulePage.__doc__
    schedules: list[Schedule]  # type: ignore[assignment]


class Feedback(feedback.Feedback, _Closed):
    __doc__ = feedback.Feedback.__doc__


class VersionFeedback(feedback.VersionFeedback, _Closed):
    __doc__ = feedback.VersionFeedback.__doc__


class FeedbackSummary(feedback.FeedbackSummary, _Closed):
    __doc__ = feedback.FeedbackSummary.__doc__
    versions: list[VersionFeedback]  # type: ignore[assignment]


class InboxItem(inbox.InboxItem, _Closed):
    __doc__ = inbox.InboxItem.__doc__
    request: PendingInput


class InboxPage(inbox.InboxPage, _Closed):
    __doc__ = inbox.InboxPage.__doc__
    inputs: list[InboxItem]  # type: ignore[assignment]


class Binding(models.Binding, _Closed):
    __doc__ = models.Binding.__doc__


class BindingList(models.BindingList, _Closed):
    __doc__ = models.BindingList.__doc__
    bindings: list[Binding]  # type: ignore[assignment]


class Tombstone(erasure.Tombstone, _Closed):
    __doc__ = erasure.Tombstone.__doc__


class TenantMaxRunning(max_running.TenantMaxRunning, _Closed):
    __doc__ = max_running.TenantMaxRunning.__doc__
