"""The sync client: each method sends the request ``calls`` builds for it and reads the
answer; ``wait`` and ``stream`` loop over such requests (turnkeep/client/calls.py,
turnkeep/client/sse.py)."""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime
from types import TracebackType
from typing import Any, Self, TypeVar

import httpx

from turnkeep.client import calls
from turnkeep.client.calls import ApiCall, Config, Messages
from turnkeep.client.erasure import SessionErasure
from turnkeep.client.errors import Unreachable
from turnkeep.client.evaluating import EvalMethods
from turnkeep.client.max_running import LimitsMethods
from turnkeep.client.search import SearchMixin
from turnkeep.client.sse import RETRYABLE
from turnkeep.feedback import Feedback, FeedbackSummary
from turnkeep.inbox import InboxPage
from turnkeep.models import (
    AgentList,
    AgentVersions,
    Attachment,
    Binding,
    BindingList,
    Delta,
    Event,
    EventPage,
    Fork,
    Project,
    ProjectPage,
    Session,
    SessionPage,
    StreamToken,
    Timeline,
    Turn,
    TurnPage,
    TurnUpgrade,
    VersionUpgrade,
)
from turnkeep.schedules import Schedule, SchedulePage

T = TypeVar("T")


class Client(EvalMethods, SessionErasure, SearchMixin, LimitsMethods):
    """The sync client. ``transport``: an httpx transport (tests pass a MockTransport)."""

    def __init__(
        self,
        url: str | None = None,
        token: str | None = None,
        *,
        timeout: float = 30.0,
        poll: float = 10.0,
        stream_timeout: float = 60.0,
        retries: int = 8,
        backoff: float = 0.2,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.config = Config(
            url,
            token,
            timeout=timeout,
            poll=poll,
            stream_timeout=stream_timeout,
            retries=retries,
            backoff=backoff,
        )
        self._http = httpx.Client(
            base_url=self.config.url,
            headers=self.config.headers,
            timeout=timeout,
            transport=transport,
        )

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def _call(self, call: ApiCall[T]) -> T:
        try:
            response = self._http.request(call.method, call.path, **call.options())
        except httpx.TransportError as exc:
            raise Unreachable(f"{call.method} {call.path}: {type(exc).__name__}: {exc}") from exc
        return call.read(response)

    # -- turns ---------------------------------------------------------------------------

    def admit(
        self,
        session_id: str,
        agent: str,
        text_or_messages: Messages,
        *,
        idempotency_key: str | None = None,
        multitask: str | None = None,
        output_schema: Mapping[str, Any] | None = None,
        budget: Mapping[str, Any] | None = None,
        project: str | None = None,
        attachments: Sequence[str] | None = None,
        agent_version: str | None = None,
        priority: int | None = None,
        expires_after: int | None = None,
        metadata: Mapping[str, str] | None = None,
        session_metadata: Mapping[str, str] | None = None,
    ) -> Turn:
        """Admit a turn (the stored one when the key was used with the same input).
        ``project``: the caller's project the session belongs to (its first turn sets
        it); ``attachments``: ids of the session's ready attachments;
        ``agent_version``: a declared version of the agent (default: its latest; 422
        ``unknown_agent`` for one the API does not declare); ``priority``: 0 (last) to
        9 (first), how soon its session is handed out (default 5); ``expires_after``:
        the session's TTL in seconds (docs/erasure.md); ``metadata``: the turn's labels,
        ``session_metadata``: a new session's (docs/search.md)."""
        return self._call(
            calls.admit(
                session_id,
                agent,
                text_or_messages,
                idempotency_key=idempotency_key,
                multitask=multitask,
                output_schema=output_schema,
                budget=budget,
                project=project,
                attachments=attachments,
                agent_version=agent_version,
                priority=priority,
                expires_after=expires_after,
                metadata=metadata,
                session_metadata=session_metadata,
            )
        )

    def get(self, session_id: str, turn_id: str) -> Turn:
        return self._call(calls.get(session_id, turn_id))

    def wait(self, session_id: str, turn_id: str, timeout: float) -> Turn:
        """The turn once terminal or parked on an open input request (someone must
        answer it), or as it is after ``timeout`` seconds (long polls of at most
        ``poll`` seconds each)."""
        until = calls.deadline(timeout)
        while True:
            call, last = calls.wait_poll(self.config, session_id, turn_id, until)
            turn = self._call(call)
            if calls.waited(turn, last):
                return turn

    def cancel(self, session_id: str, turn_id: str) -> Turn:
        """Request cancellation; 409 ``turn_not_active`` once the turn has ended."""
        return self._call(calls.cancel(session_id, turn_id))

    def answer(
        self, session_id: str, turn_id: str, request_id: str, body: Mapping[str, Any]
    ) -> Turn:
        """Answer the turn's open input request (e.g. ``{"approved": True}``)."""
        return self._call(calls.answer(session_id, turn_id, request_id, body))

    def answer_many(
        self, session_id: str, turn_id: str, answers: Mapping[str, Mapping[str, Any]]
    ) -> Turn:
        """Answer several open requests of the turn's wait at once, all or none
        (``{request_id: answer}``: the approvals of one model answer are asked
        together; ``Turn.pending_inputs`` lists them)."""
        return self._call(calls.answer_many(session_id, turn_id, answers))

    def approve(self, session_id: str, turn_id: str, request_id: str, reason: str = "") -> Turn:
        """Approve the open approval request (``{"approved": true}``)."""
        return self._call(calls.decide(session_id, turn_id, request_id, True, reason))

    def deny(self, session_id: str, turn_id: str, request_id: str, reason: str = "") -> Turn:
        """Deny the open approval request (``{"approved": false}``)."""
        return self._call(calls.decide(session_id, turn_id, request_id, False, reason))

    def timeline(self, session_id: str, turn_id: str) -> Timeline:
        """The turn's attempts, steps and waits (no message content)."""
        return self._call(calls.timeline(session_id, turn_id))

    def upgrade_turn(self, session_id: str, turn_id: str) -> TurnUpgrade:
        """Move the turn to the newest version of its agent at its next safe point,
        pinned or not (admin role; 409 ``turn_not_active`` once it has ended)."""
        return self._call(calls.upgrade_turn(session_id, turn_id))

    # -- agents and their versions -------------------------------------------------------

    def agents(self) -> AgentList:
        """The agents the API declares, by name, each with its versions (oldest first)."""
        return self._call(calls.agents())

    def agent_versions(self, name: str) -> AgentVersions:
        """Every definition of the agent that is declared, still has active turns of
        the tenant, or is served by a live worker: its turns by state and its workers."""
        return self._call(calls.agent_versions(name))

    def upgrade_version(self, name: str, definition_hash: str) -> VersionUpgrade:
        """Flag every active turn of the tenant on that definition to move to the
        newest version (admin role); ``requested``: how many."""
        return self._call(calls.upgrade_version(name, definition_hash))

    # -- sessions, events ----------------------------------------------------------------

    def session(self, session_id: str) -> Session:
        return self._call(calls.session(session_id))

    def sessions(self, *, limit: int = 50, after: str | None = None) -> SessionPage:
        """A page of the tenant's sessions, newest first (``after``: the last ``next``)."""
        return self._call(calls.sessions(limit, after))

    def turns(self, session_id: str, *, limit: int = 50, after: str | None = None) -> TurnPage:
        """A page of the session's turns, newest first."""
        return self._call(calls.turns(session_id, limit, after))

    def event_page(self, session_id: str, after: int = 0, limit: int = 500) -> EventPage:
        """At most ``limit`` committed events after ``after``, as one JSON page."""
        return self._call(calls.event_page(session_id, after, limit))

    def events(self, session_id: str, after: int = 0) -> Iterator[Event]:
        """The session's committed events with ``seq > after``, live, without end;
        reconnects from the last seq yielded whenever the stream drops."""
        for item in self.stream(session_id, after):
            if isinstance(item, Event):
                yield item

    def stream(
        self, session_id: str, after: int = 0, *, deltas: bool = False
    ) -> Iterator[Event | Delta]:
        """As ``events``, with the live model text (``Delta``) in between when
        ``deltas``: speculative, lost on a reconnect, superseded by the committed
        ``model.completed``."""
        cursor = self.config.cursor(after)
        path = calls.events_path(session_id)
        while True:
            why: object = "the stream ended"
            try:
                with self._http.stream(
                    "GET", path, headers=cursor.headers(), timeout=self.config.stream_timeouts()
                ) as response:
                    if response.status_code >= 400:
                        response.read()
                    cursor.opened(response)
                    for line in response.iter_lines():
                        if (item := cursor.line(line, deltas)) is not None:
                            yield item
            except RETRYABLE as exc:
                why = exc
            time.sleep(cursor.dropped(why))

    def stream_token(self, session_id: str) -> StreamToken:
        """A short-lived token to follow this session's events from a browser
        (``?stream_token=``); 503 ``stream_tokens_not_configured`` without a secret."""
        return self._call(calls.stream_token(session_id))

    # -- attachments, forks, projects ----------------------------------------------------

    def upload(
        self,
        session_id: str,
        content: bytes,
        *,
        filename: str,
        content_type: str,
        idempotency_key: str | None = None,
    ) -> Attachment:
        """Upload a file to an existing session; answered once it is ``ready`` (its id
        is the key). At most 192 KiB; 413 ``attachment_too_large``, 415 for a type
        outside the allowlist."""
        return self._call(
            calls.upload(
                session_id,
                content,
                filename=filename,
                content_type=content_type,
                idempotency_key=idempotency_key,
            )
        )

    def attachment(self, session_id: str, attachment_id: str) -> Attachment:
        return self._call(calls.attachment(session_id, attachment_id))

    def attachment_content(self, session_id: str, attachment_id: str) -> bytes:
        return self._call(calls.attachment_content(session_id, attachment_id))

    def delete_attachment(self, session_id: str, attachment_id: str) -> None:
        """Delete it (finished by the runtime even after a crash); 404 once gone."""
        self._call(calls.delete_attachment(session_id, attachment_id))

    def fork(
        self,
        session_id: str,
        at_seq: int,
        *,
        new_session_id: str | None = None,
        idempotency_key: str | None = None,
    ) -> Fork:
        """A new session whose history is this one's up to ``at_seq`` (the source is
        untouched); the same fork again answers the same new session."""
        return self._call(calls.fork(session_id, at_seq, new_session_id, idempotency_key))

    def rerun(
        self,
        session_id: str,
        turn_id: str,
        from_step: int,
        *,
        replace: Mapping[str, Any] | None = None,
        fork: bool = False,
        new_session_id: str | None = None,
        idempotency_key: str | None = None,
    ) -> Turn:
        """A new turn re-running this one from ``from_step``: the outcomes before it
        are reused (never run again); ``replace`` (``{"tool_result": {"content": ...}}``
        or ``{"model_answer": {"content": ..., "tool_calls": [...]}}``) is the edited
        outcome of that step; ``fork``: in a fork of the session."""
        return self._call(
            calls.rerun(
                session_id,
                turn_id,
                from_step,
                replace=replace,
                fork=fork,
                new_session_id=new_session_id,
                idempotency_key=idempotency_key,
            )
        )

    # -- schedules -----------------------------------------------------------------------

    def inbox(self, *, limit: int = 50, after: str | None = None) -> InboxPage:
        """Every open request you may answer across the tenant's sessions, a page."""
        return self._call(calls.inbox(limit, after))

    def give_feedback(
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
        given = {"thumbs": thumbs, "score": score, "scale": scale, "step": step, "note": note}
        body = {k: v for k, v in given.items() if v is not None}
        return self._call(calls.give_feedback(session_id, turn_id, body))

    def feedback_summary(self, agent: str) -> FeedbackSummary:
        """The tenant's feedback on ``agent``, per version."""
        return self._call(calls.feedback_summary(agent))

    def create_schedule(
        self,
        agent: str,
        messages: Messages,
        *,
        cron: str | None = None,
        every_seconds: float | None = None,
        timezone: str = "UTC",
        schedule_id: str | None = None,
        session_id: str | None = None,
        missed: str = "run_once",
        idempotency_key: str | None = None,
        at: datetime | None = None,
    ) -> Schedule:
        """The agent's turn with ``messages`` on every tick (a cron expression in
        ``timezone``, every ``every_seconds``, or once ``at`` an aware time); the same id
        and spec again: the same schedule."""
        body = calls.schedule_body(
            agent, messages, cron, every_seconds, timezone, schedule_id, session_id, missed, at
        )
        return self._call(calls.create_schedule(body, idempotency_key))

    def schedule(self, schedule_id: str) -> Schedule:
        return self._call(calls.schedule(schedule_id))

    def schedules(self, *, limit: int = 50, after: str | None = None) -> SchedulePage:
        return self._call(calls.schedules(limit, after))

    def pause_schedule(self, schedule_id: str) -> Schedule:
        return self._call(calls.pause_schedule(schedule_id, True))

    def resume_schedule(self, schedule_id: str) -> Schedule:
        """Resume it from its next tick after now (ticks passed while paused never run)."""
        return self._call(calls.pause_schedule(schedule_id, False))

    def delete_schedule(self, schedule_id: str) -> None:
        self._call(calls.delete_schedule(schedule_id))

    def create_project(
        self,
        project_id: str | None = None,
        *,
        overrides: Mapping[str, Any] | None = None,
        idempotency_key: str | None = None,
    ) -> Project:
        """A project owned by the caller (the token's subject), 404 to everyone else."""
        return self._call(calls.create_project(project_id, overrides, idempotency_key))

    def project(self, project_id: str) -> Project:
        return self._call(calls.project(project_id))

    def projects(self, *, limit: int = 50, after: str | None = None) -> ProjectPage:
        """A page of the caller's projects, newest first."""
        return self._call(calls.projects(limit, after))

    def update_project(self, project_id: str, overrides: Mapping[str, Any]) -> Project:
        """Replace its overrides; turns admitted before keep the ones they pinned."""
        return self._call(calls.update_project(project_id, overrides))

    def create_binding(self, **body: Any) -> Binding:
        """Bind a chat bridge's sender (``bridge``, ``workspace``, ``channel``, ``user``)
        to a subject of the tenant answered by ``agent`` (an admin's token)."""
        return self._call(calls.create_binding(body))

    def bindings(self) -> BindingList:
        """The tenant's bindings, live ones first."""
        return self._call(calls.bindings())

    def revoke_binding(self, binding_id: str) -> Binding:
        """Revoke a live binding: its sender's next message admits nothing."""
        return self._call(calls.revoke_binding(binding_id))
