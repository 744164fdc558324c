"""The async client: the same methods as ``Client``, awaited, over the same requests
(turnkeep/client/calls.py) and the same stream cursor (turnkeep/client/sse.py)."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Mapping, Sequence
from datetime import datetime
from types import TracebackType
from typing import Any, Self, TypeVar

import anyio
import httpx

from turnkeep.client import calls
from turnkeep.client.calls import ApiCall, Config, Messages
from turnkeep.client.erasure import AsyncSessionErasure
from turnkeep.client.errors import Unreachable
from turnkeep.client.evaluating import AsyncEvalMethods
from turnkeep.client.max_running import AsyncLimitsMethods
from turnkeep.client.search import AsyncSearchMixin
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


class AsyncClient(AsyncEvalMethods, AsyncSessionErasure, AsyncSearchMixin, AsyncLimitsMethods):
    """The async client: the same methods as ``Client``, awaited."""

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
        transport: httpx.AsyncBaseTransport | None = None,
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
        self._http = httpx.AsyncClient(
            base_url=self.config.url,
            headers=self.config.headers,
            timeout=timeout,
            transport=transport,
        )

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    async def _call(self, call: ApiCall[T]) -> T:
        try:
            response = await self._http.request(call.method, call.path, **call.options())
        except httpx.TransportError as exc:
            raise Unreachable(f"{call.method} {call.path}: {type(exc).__name__}: {exc}") from exc
        return call.read(response)

    # -- turns ---------------------------------------------------------------------------

    async def admit(
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
        return await self._call(
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

    async def get(self, session_id: str, turn_id: str) -> Turn:
        return await self._call(calls.get(session_id, turn_id))

    async def wait(self, session_id: str, turn_id: str, timeout: float) -> Turn:
        until = calls.deadline(timeout)
        while True:
            call, last = calls.wait_poll(self.config, session_id, turn_id, until)
            turn = await self._call(call)
            if calls.waited(turn, last):
                return turn

    async def cancel(self, session_id: str, turn_id: str) -> Turn:
        return await self._call(calls.cancel(session_id, turn_id))

    async def answer(
        self, session_id: str, turn_id: str, request_id: str, body: Mapping[str, Any]
    ) -> Turn:
        return await self._call(calls.answer(session_id, turn_id, request_id, body))

    async def answer_many(
        self, session_id: str, turn_id: str, answers: Mapping[str, Mapping[str, Any]]
    ) -> Turn:
        return await self._call(calls.answer_many(session_id, turn_id, answers))

    async def approve(
        self, session_id: str, turn_id: str, request_id: str, reason: str = ""
    ) -> Turn:
        return await self._call(calls.decide(session_id, turn_id, request_id, True, reason))

    async def deny(self, session_id: str, turn_id: str, request_id: str, reason: str = "") -> Turn:
        return await self._call(calls.decide(session_id, turn_id, request_id, False, reason))

    async def timeline(self, session_id: str, turn_id: str) -> Timeline:
        return await self._call(calls.timeline(session_id, turn_id))

    async def upgrade_turn(self, session_id: str, turn_id: str) -> TurnUpgrade:
        return await self._call(calls.upgrade_turn(session_id, turn_id))

    # -- agents and their versions -------------------------------------------------------

    async def agents(self) -> AgentList:
        return await self._call(calls.agents())

    async def agent_versions(self, name: str) -> AgentVersions:
        return await self._call(calls.agent_versions(name))

    async def upgrade_version(self, name: str, definition_hash: str) -> VersionUpgrade:
        return await self._call(calls.upgrade_version(name, definition_hash))

    # -- sessions, events ----------------------------------------------------------------

    async def session(self, session_id: str) -> Session:
        return await self._call(calls.session(session_id))

    async def sessions(self, *, limit: int = 50, after: str | None = None) -> SessionPage:
        return await self._call(calls.sessions(limit, after))

    async def turns(
        self, session_id: str, *, limit: int = 50, after: str | None = None
    ) -> TurnPage:
        return await self._call(calls.turns(session_id, limit, after))

    async def event_page(self, session_id: str, after: int = 0, limit: int = 500) -> EventPage:
        return await self._call(calls.event_page(session_id, after, limit))

    async def events(self, session_id: str, after: int = 0) -> AsyncGenerator[Event, None]:
        async for item in self.stream(session_id, after):
            if isinstance(item, Event):
                yield item

    async def stream(
        self, session_id: str, after: int = 0, *, deltas: bool = False
    ) -> AsyncGenerator[Event | Delta, None]:
        cursor = self.config.cursor(after)
        path = calls.events_path(session_id)
        while True:
            why: object = "the stream ended"
            try:
                async with self._http.stream(
                    "GET", path, headers=cursor.headers(), timeout=self.config.stream_timeouts()
                ) as response:
                    if response.status_code >= 400:
                        await response.aread()
                    cursor.opened(response)
                    async for line in response.aiter_lines():
                        if (item := cursor.line(line, deltas)) is not None:
                            yield item
            except RETRYABLE as exc:
                why = exc
            await anyio.sleep(cursor.dropped(why))

    async def stream_token(self, session_id: str) -> StreamToken:
        return await self._call(calls.stream_token(session_id))

    # -- attachments, forks, projects ----------------------------------------------------

    async def upload(
        self,
        session_id: str,
        content: bytes,
        *,
        filename: str,
        content_type: str,
        idempotency_key: str | None = None,
    ) -> Attachment:
        return await self._call(
            calls.upload(
                session_id,
                content,
                filename=filename,
                content_type=content_type,
                idempotency_key=idempotency_key,
            )
        )

    async def attachment(self, session_id: str, attachment_id: str) -> Attachment:
        return await self._call(calls.attachment(session_id, attachment_id))

    async def attachment_content(self, session_id: str, attachment_id: str) -> bytes:
        return await self._call(calls.attachment_content(session_id, attachment_id))

    async def delete_attachment(self, session_id: str, attachment_id: str) -> None:
        await self._call(calls.delete_attachment(session_id, attachment_id))

    async def fork(
        self,
        session_id: str,
        at_seq: int,
        *,
        new_session_id: str | None = None,
        idempotency_key: str | None = None,
    ) -> Fork:
        return await self._call(calls.fork(session_id, at_seq, new_session_id, idempotency_key))

    async def rerun(
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
        return await self._call(
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

    async def inbox(self, *, limit: int = 50, after: str | None = None) -> InboxPage:
        """Every open request you may answer across the tenant's sessions, a page."""
        return await self._call(calls.inbox(limit, after))

    async def give_feedback(
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
        return await self._call(calls.give_feedback(session_id, turn_id, body))

    async def feedback_summary(self, agent: str) -> FeedbackSummary:
        """The tenant's feedback on ``agent``, per version."""
        return await self._call(calls.feedback_summary(agent))

    async def create_schedule(
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
        body = calls.schedule_body(
            agent, messages, cron, every_seconds, timezone, schedule_id, session_id, missed, at
        )
        return await self._call(calls.create_schedule(body, idempotency_key))

    async def schedule(self, schedule_id: str) -> Schedule:
        return await self._call(calls.schedule(schedule_id))

    async def schedules(self, *, limit: int = 50, after: str | None = None) -> SchedulePage:
        return await self._call(calls.schedules(limit, after))

    async def pause_schedule(self, schedule_id: str) -> Schedule:
        return await self._call(calls.pause_schedule(schedule_id, True))

    async def resume_schedule(self, schedule_id: str) -> Schedule:
        return await self._call(calls.pause_schedule(schedule_id, False))

    async def delete_schedule(self, schedule_id: str) -> None:
        await self._call(calls.delete_schedule(schedule_id))

    async def create_project(
        self,
        project_id: str | None = None,
        *,
        overrides: Mapping[str, Any] | None = None,
        idempotency_key: str | None = None,
    ) -> Project:
        return await self._call(calls.create_project(project_id, overrides, idempotency_key))

    async def project(self, project_id: str) -> Project:
        return await self._call(calls.project(project_id))

    async def projects(self, *, limit: int = 50, after: str | None = None) -> ProjectPage:
        return await self._call(calls.projects(limit, after))

    async def update_project(self, project_id: str, overrides: Mapping[str, Any]) -> Project:
        return await self._call(calls.update_project(project_id, overrides))

    async def create_binding(self, **body: Any) -> Binding:
        """Bind a chat bridge's sender (``bridge``, ``workspace``, ``channel``, ``user``)
        to a subject of the tenant answered by ``agent`` (an admin's token)."""
        return await self._call(calls.create_binding(body))

    async def bindings(self) -> BindingList:
        """The tenant's bindings, live ones first."""
        return await self._call(calls.bindings())

    async def revoke_binding(self, binding_id: str) -> Binding:
        """Revoke a live binding: its sender's next message admits nothing."""
        return await self._call(calls.revoke_binding(binding_id))
