"""One A2A JSON-RPC call over the submit path: admit or answer a message's turn,
read a task, follow its journal until it settles.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass
from functools import partial
from typing import Any, TypeVar

import anyio
from a2a.server.context import ServerCallContext
from a2a.server.events import Event
from a2a.types import Message
from a2a.utils.errors import InvalidParamsError, TaskNotFoundError, UnsupportedOperationError

from turnkeep.api.a2a.errors import edge
from turnkeep.api.a2a.ids import session_for, session_of, turn_id_for
from turnkeep.api.a2a.messages import answer_of, answers_of, metadata_of, text_of
from turnkeep.api.a2a.translate import SETTLES, open_request, settled, stream_events
from turnkeep.api.auth import Principal
from turnkeep.api.resources import ApiResources
from turnkeep.api.service import admission, answers, follow, reads
from turnkeep.api.service.requests import TurnRequest
from turnkeep.runtime import input_groups
from turnkeep.runtime.states import EventType
from turnkeep.store.errors import NotFound
from turnkeep.store.records import EventRecord, TurnRecord

T = TypeVar("T")


@dataclass(frozen=True)
class Started:
    """A turn a message moved (admitted or answered) and the journal seq to follow from."""

    turn: TurnRecord
    after: int


@dataclass(frozen=True)
class Call:
    """One JSON-RPC call: the process's services, the caller, the endpoint's agent."""

    services: ApiResources
    principal: Principal
    #: the agent of ``/a2a/{agent}``; None at the root endpoint (``/a2a``)
    agent: str | None

    @classmethod
    def of(cls, context: ServerCallContext) -> Call:
        state = context.state
        return cls(state["services"], state["principal"], state.get("agent"))

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(services, principal, *args)`` of the submit path, on a blocking thread."""
        return await self.services.run(fn, self.services, self.principal, *args)

    async def turn(self, task_id: str) -> TurnRecord:
        sid = session_of(task_id)
        if sid is None:
            raise TaskNotFoundError()
        return self._mine(await self.run(reads.read, sid, task_id))

    def _mine(self, turn: TurnRecord) -> TurnRecord:
        if self.agent is not None and turn.agent_name != self.agent:
            raise TaskNotFoundError()
        return turn

    async def snapshot(self, session_id: str, task_id: str) -> tuple[int, TurnRecord]:
        """The session's head seq, then the turn: what the turn is, and from where on
        the journal has what happened since (an event between the two reads is in
        both: a stream repeats one status, never misses one)."""
        store, tenant = self.services.store, self.principal.tenant
        head = (await self.services.run(store.reads.get_session, tenant, session_id)).head_seq
        return head, self._mine(await self.run(reads.read, session_id, task_id))

    async def send(self, message: Message) -> Started:
        if message.task_id:
            return await self._answer(message)
        sid = session_for(message.context_id, message.message_id)
        body = TurnRequest.model_validate(
            {
                "agent": await self._agent_for(message, sid),
                "input": [{"role": "user", "content": text_of(message)}],
            }
        )
        tid = turn_id_for(sid, message.message_id)
        admitted = await self.run(partial(admission.admit, surface="a2a"), sid, tid, body)
        await self.services.run(admission.after_admission, self.services, admitted)
        if admitted.event is not None:
            return Started(admitted.turn, admitted.event.seq)
        head, turn = await self.snapshot(sid, tid)  # a replay: the turn as it is now
        return Started(turn, head)

    async def _agent_for(self, message: Message, session_id: str) -> str:
        named = metadata_of(message).get("skill")
        if self.agent is not None:
            if named not in (None, self.agent):
                raise InvalidParamsError("metadata.skill names another agent than this one")
            return self.agent
        if isinstance(named, str) and named:
            return named
        if message.context_id:
            store = self.services.store
            try:
                session = await self.services.run(
                    store.reads.get_session, self.principal.tenant, session_id
                )
            except NotFound:
                pass
            else:
                return session.agent_name
        raise InvalidParamsError("name the agent: message metadata {'skill': <a skill id>}")

    async def _answer(self, message: Message) -> Started:
        turn = await self.turn(message.task_id)
        if message.context_id and message.context_id != turn.session_id:
            raise InvalidParamsError("the contextId is not the task's")
        if turn.state.terminal:
            raise UnsupportedOperationError(
                "the task has ended: a message without taskId starts a new one"
            )
        pending = open_request(turn)
        if pending is None:
            raise InvalidParamsError(
                "the task is not waiting for input", data={"code": "input_not_open"}
            )
        meta = metadata_of(message)
        many = answers_of(meta)
        if many is not None:  # several requests of the wait at once (all or none)
            done = await self.run(answers.answer_many, turn.session_id, turn.turn_id, many)
            await self.services.run(answers.after_answer, self.services, done)
            return Started(done.turn, done.events[0].seq)
        asked = meta.get("request_id", pending.request_id)
        if pending.member(str(asked)) is None:
            raise InvalidParamsError(
                "the task waits on another request", data={"code": "input_not_open"}
            )
        body = answer_of(message)
        answered = await self.run(answers.answer, turn.session_id, turn.turn_id, str(asked), body)
        await self.services.run(answers.after_answer, self.services, answered)
        return Started(answered.turn, answered.event.seq)

    async def settle(self, started: Started, seconds: float) -> TurnRecord:
        """The turn once it ended or waits on someone, or as it is after ``seconds``."""
        turn = started.turn
        if settled(turn):
            return turn
        with anyio.move_on_after(seconds):
            async for _ in self.events(turn, started.after):
                pass
        return self._mine(await self.run(reads.read, turn.session_id, turn.turn_id))

    async def events(self, turn: TurnRecord, after: int) -> AsyncGenerator[Event, None]:
        """The turn's stream events from the journal after seq ``after``, up to and
        including the next one after which it ends or waits on someone."""
        tid = turn.turn_id

        def settles(event: EventRecord) -> bool:
            if event.type == EventType.INPUT_REQUESTED and not input_groups.parks(event.data):
                return False  # asked together with the next: the turn runs on to it
            return event.turn_id == tid and event.type in SETTLES

        journal = follow.follow(
            self.services, self.principal, turn.session_id, after=after, until=settles
        )
        try:
            with edge():
                async for event in journal:
                    if isinstance(event, EventRecord) and event.turn_id == tid:
                        for out in stream_events(event):
                            yield out
        finally:
            await journal.aclose()
