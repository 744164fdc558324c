"""a2a-sdk's request handler over the submit path: one method per JSON-RPC method;
the journal is the task store. The extended card is the caller's tenant's view of the
agents (api/a2a/cards.py); push notifications are not offered.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator

from a2a.server.context import ServerCallContext
from a2a.server.events import Event
from a2a.server.request_handlers.request_handler import RequestHandler, validate_request_params
from a2a.types import (
    AgentCard,
    CancelTaskRequest,
    DeleteTaskPushNotificationConfigRequest,
    GetExtendedAgentCardRequest,
    GetTaskPushNotificationConfigRequest,
    GetTaskRequest,
    ListTaskPushNotificationConfigsRequest,
    ListTaskPushNotificationConfigsResponse,
    ListTasksRequest,
    ListTasksResponse,
    Message,
    SendMessageRequest,
    SubscribeToTaskRequest,
    Task,
    TaskPushNotificationConfig,
)
from a2a.utils.errors import (
    InvalidParamsError,
    PushNotificationNotSupportedError,
    TaskNotCancelableError,
    TaskNotFoundError,
    UnsupportedOperationError,
)
from a2a.utils.task import apply_history_length, validate_history_length, validate_page_size

from turnkeep.api.a2a.call import Call
from turnkeep.api.a2a.cards import agent_card, described, root_card
from turnkeep.api.a2a.errors import edge
from turnkeep.api.a2a.ids import context_of, session_of
from turnkeep.api.a2a.translate import settled, task_of
from turnkeep.api.service import cancel, reads
from turnkeep.api.service.defaults import defaults_for
from turnkeep.runtime.numerals import ascii_int

#: seconds a cancel of a running turn waits for its worker to stop it
CANCEL_WAIT = 5.0


class TurnkeepRequestHandler(RequestHandler):
    """A2A's request handler over the submit path: the journal is the task store."""

    @validate_request_params
    async def on_get_task(self, params: GetTaskRequest, context: ServerCallContext) -> Task:
        validate_history_length(params)
        with edge():
            turn = await Call.of(context).turn(params.id)
            return apply_history_length(task_of(turn), params)

    @validate_request_params
    async def on_list_tasks(
        self, params: ListTasksRequest, context: ServerCallContext
    ) -> ListTasksResponse:
        """The tasks of one context (``contextId`` is required), newest first."""
        validate_history_length(params)
        size = params.page_size if params.HasField("page_size") else 50
        validate_page_size(size)
        if not params.context_id:
            raise InvalidParamsError("contextId is required: tasks are listed per context")
        session_id = context_of(params.context_id)
        call = Call.of(context)
        with edge():
            # (none for another owner's project session, as for a missing one)
            turns = await call.run(reads.turns_of, session_id)
            tasks = [
                task_of(t)
                for t in reversed(turns)
                if session_of(t.turn_id) == t.session_id and call.agent in (None, t.agent_name)
            ]
        if params.status:
            tasks = [t for t in tasks if t.status.state == params.status]
        start = ascii_int(params.page_token) if params.page_token else 0
        if start is None:
            raise InvalidParamsError("pageToken: not one this server gave")
        page = [apply_history_length(t, params) for t in tasks[start : start + size]]
        if not params.include_artifacts:
            for task in page:
                task.ClearField("artifacts")
        rest = start + size < len(tasks)
        return ListTasksResponse(
            tasks=page,
            next_page_token=str(start + size) if rest else "",
            page_size=size,
            total_size=len(tasks),
        )

    @validate_request_params
    async def on_cancel_task(self, params: CancelTaskRequest, context: ServerCallContext) -> Task:
        """Waiting, queued and parked turns are cancelled at once; a running one at its
        worker's next safe point (waited for ``CANCEL_WAIT`` s, then as it is)."""
        call = Call.of(context)
        with edge():
            turn = await call.turn(params.id)
            if turn.state.terminal:
                raise TaskNotCancelableError("the task has already ended")
            done = await call.run(cancel.cancel, turn.session_id, turn.turn_id)
            await call.services.run(cancel.after_cancel, call.services, done)
            turn = done.turn
            if not turn.state.terminal:
                turn = await reads.wait(
                    call.services, call.principal, turn.session_id, turn.turn_id, CANCEL_WAIT
                )
            return task_of(turn)

    @validate_request_params
    async def on_message_send(
        self, params: SendMessageRequest, context: ServerCallContext
    ) -> Task | Message:
        validate_history_length(params.configuration)
        call = Call.of(context)
        with edge():
            started = await call.send(params.message)
            turn = started.turn
            if not params.configuration.return_immediately:
                turn = await call.settle(started, call.services.settings.bounds.max_wait)
            return apply_history_length(task_of(turn), params.configuration)

    @validate_request_params
    async def on_message_send_stream(
        self, params: SendMessageRequest, context: ServerCallContext
    ) -> AsyncGenerator[Event, None]:
        validate_history_length(params.configuration)
        call = Call.of(context)
        with edge():
            started = await call.send(params.message)
            first = apply_history_length(task_of(started.turn), params.configuration)
        yield first
        if not settled(started.turn):
            async for event in call.events(started.turn, started.after):
                yield event

    @validate_request_params
    async def on_subscribe_to_task(
        self, params: SubscribeToTaskRequest, context: ServerCallContext
    ) -> AsyncGenerator[Event, None]:
        """The task as it is, then its events until it ends or waits on someone anew."""
        call = Call.of(context)
        sid = session_of(params.id)
        if sid is None:
            raise TaskNotFoundError()
        with edge():
            head, turn = await call.snapshot(sid, params.id)
            if turn.state.terminal:
                raise UnsupportedOperationError(f"the task has ended ({turn.state.value})")
            first = task_of(turn)
        yield first
        async for event in call.events(turn, head):
            yield event

    async def on_create_task_push_notification_config(
        self, params: TaskPushNotificationConfig, context: ServerCallContext
    ) -> TaskPushNotificationConfig:
        raise PushNotificationNotSupportedError()

    async def on_get_task_push_notification_config(
        self, params: GetTaskPushNotificationConfigRequest, context: ServerCallContext
    ) -> TaskPushNotificationConfig:
        raise PushNotificationNotSupportedError()

    async def on_list_task_push_notification_configs(
        self, params: ListTaskPushNotificationConfigsRequest, context: ServerCallContext
    ) -> ListTaskPushNotificationConfigsResponse:
        raise PushNotificationNotSupportedError()

    async def on_delete_task_push_notification_config(
        self, params: DeleteTaskPushNotificationConfigRequest, context: ServerCallContext
    ) -> None:
        raise PushNotificationNotSupportedError()

    async def on_get_extended_agent_card(
        self, params: GetExtendedAgentCardRequest, context: ServerCallContext
    ) -> AgentCard:
        """The endpoint's card as the caller's tenant sees it: each agent at the
        version the tenant's new tasks get (a gated agent's promoted one; the public
        card's is a tenant's that promoted none)."""
        call = Call.of(context)
        services = call.services
        with edge():
            defaults = await services.run(defaults_for, services, call.principal.tenant)
        agents = described(services.registry, defaults, tenant=True)
        base = context.state["base"]
        if call.agent is None:
            return root_card(base, agents)
        return agent_card(base, next(d for d in agents if d.agent.name == call.agent))
