"""The A2A surface with a2a-sdk's own client: the real API (uvicorn), a real worker.

A task is a turn, a context a session; the journal is the task store, so what the
A2A client sees is what the HTTP surface shows for the same ids.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from a2a.client import A2ACardResolver, Client, ClientConfig, create_client
from a2a.helpers import get_artifact_text, new_data_part
from a2a.types import (
    CancelTaskRequest,
    GetExtendedAgentCardRequest,
    GetTaskRequest,
    InvalidParamsError,
    ListTasksRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    StreamResponse,
    SubscribeToTaskRequest,
    Task,
    TaskNotCancelableError,
    TaskNotFoundError,
    TaskState,
    UnsupportedOperationError,
)
from google.protobuf.json_format import MessageToDict

from tests.conftest import WORKER_ENV
from tests.integration.api_server import Api, serve_api
from tests.procs import Procs


@pytest.fixture(scope="module")
def api(service_env: dict[str, str]) -> Iterator[Api]:
    # the worker's broker and agents, so the API's enqueues reach it
    with serve_api(
        service_env, agents="tests.agents", broker_url=service_env["TURNKEEP_REDIS_URL"]
    ) as handle:
        yield handle


@pytest.fixture(scope="module")
def worker(
    service_env: dict[str, str], effects_tables: None, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Procs]:
    """One worker for the module: starting one per test would cost more than the tests."""
    logdir = Path(tmp_path_factory.mktemp("a2a"))
    procs = Procs(env={**service_env, **WORKER_ENV}, logdir=logdir)
    procs.worker()
    yield procs
    procs.stop_all()


@asynccontextmanager
async def a2a(
    api: Api, agent: str = "memory", *, token: str = "a", streaming: bool = False
) -> AsyncIterator[Client]:
    """An SDK client made from the agent's card, with a tenant's bearer token."""
    secret = {"a": api.token_a, "b": api.token_b}[token]
    async with httpx.AsyncClient(headers={"Authorization": f"Bearer {secret}"}, timeout=30) as http:
        path = "/a2a" if agent == "" else f"/a2a/{agent}"
        client = await create_client(
            f"{api.url}{path}", ClientConfig(httpx_client=http, streaming=streaming)
        )
        try:
            yield client
        finally:
            await client.close()


def _message(
    text: str | None = None,
    *,
    data: dict[str, Any] | None = None,
    message_id: str | None = None,
    context_id: str = "",
    task_id: str = "",
    metadata: dict[str, Any] | None = None,
) -> SendMessageRequest:
    part = Part(text=text) if data is None else new_data_part(data)
    message = Message(
        message_id=message_id or uuid.uuid4().hex,
        role=Role.ROLE_USER,
        parts=[part],
        context_id=context_id,
        task_id=task_id,
    )
    if metadata:
        message.metadata.update(metadata)
    return SendMessageRequest(message=message)


async def _send(client: Client, request: SendMessageRequest) -> Task:
    """A non-streaming send: its one response is the task."""
    responses = [r async for r in client.send_message(request)]
    assert len(responses) == 1 and responses[0].HasField("task"), responses
    return responses[0].task


def _state(event: StreamResponse) -> int | None:
    if event.HasField("task"):
        return event.task.status.state
    if event.HasField("status_update"):
        return event.status_update.status.state
    return None


def _pending(task: Task) -> dict[str, Any]:
    """The open request, from the data part of the input-required status message."""
    assert task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED, task
    [data] = [p for p in task.status.message.parts if p.HasField("data")]
    return MessageToDict(data.data)


def test_cards_are_public_and_list_the_agents(api: Api) -> None:
    async def run() -> None:
        async with httpx.AsyncClient(timeout=10) as http:  # no token
            root = await A2ACardResolver(http, api.url).get_agent_card()
            card = await A2ACardResolver(http, f"{api.url}/a2a/memory").get_agent_card()
            missing = await http.get(f"{api.url}/a2a/nobody/.well-known/agent-card.json")
        skills = {s.id for s in root.skills}
        assert {"memory", "demo", "banker"} <= skills
        assert [i.url for i in root.supported_interfaces] == [f"{api.url}/a2a"]
        assert card.name == "memory" and [s.id for s in card.skills] == ["memory"]
        [interface] = card.supported_interfaces
        assert (interface.url, interface.protocol_binding, interface.protocol_version) == (
            f"{api.url}/a2a/memory",
            "JSONRPC",
            "1.0",
        )
        assert card.capabilities.streaming and "bearer" in card.security_schemes
        assert missing.status_code == 404

    asyncio.run(run())


def test_rpc_needs_the_token(api: Api) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "x"}}
    r = httpx.post(f"{api.url}/a2a/memory", json=body, headers={"A2A-Version": "1.0"})
    assert r.status_code == 401 and r.json()["code"] == "unauthorized"
    assert httpx.post(f"{api.url}/a2a", json=body).status_code == 401


def test_send_waits_for_the_completed_task(api: Api, worker: Procs) -> None:
    async def run() -> Task:
        async with a2a(api) as client:
            task = await _send(client, _message("hello"))
            again = await client.get_task(GetTaskRequest(id=task.id))
            assert again.status.state == TaskState.TASK_STATE_COMPLETED
            return task

    task = asyncio.run(run())
    assert task.status.state == TaskState.TASK_STATE_COMPLETED, task
    assert get_artifact_text(task.artifacts[0]) == "seen 1: hello"
    assert task.context_id.startswith("a2a-") and task.id.startswith(task.context_id + ".")
    assert [p.text for p in task.history[0].parts] == ["hello"]
    # the same turn over HTTP: task id = turn id, context id = session id
    turn = api.client().get(f"/v1/sessions/{task.context_id}/turns/{task.id}").json()
    assert (turn["state"], turn["result"]["text"], turn["agent"]) == (
        "completed",
        "seen 1: hello",
        "memory",
    )


def test_stream_follows_the_journal_to_completion(api: Api, worker: Procs) -> None:
    async def run() -> tuple[list[StreamResponse], Task]:
        async with a2a(api, "demo", streaming=True) as client:
            events = [e async for e in client.send_message(_message("Weather in Paris?"))]
            task = await client.get_task(GetTaskRequest(id=events[0].task.id))
            return events, task

    events, task = asyncio.run(run())
    assert events[0].HasField("task")
    states = [_state(e) for e in events]
    assert TaskState.TASK_STATE_WORKING in states
    assert states[-1] == TaskState.TASK_STATE_COMPLETED
    journal = [e.status_update.metadata["turnkeep"]["event"] for e in events[1:] if _state(e)]
    assert journal[-1] == "turn.completed" and "tool.completed" in journal
    [artifact] = [e.artifact_update.artifact for e in events if e.HasField("artifact_update")]
    assert get_artifact_text(artifact).startswith("In Paris it is ")
    assert task.status.state == TaskState.TASK_STATE_COMPLETED
    assert get_artifact_text(task.artifacts[0]) == get_artifact_text(artifact)


def test_cancel_a_task_waiting_for_approval(api: Api, worker: Procs) -> None:
    async def run() -> None:
        async with (
            a2a(api, "banker") as client,
            a2a(api, "banker", streaming=True) as streaming,
        ):
            task = await _send(client, _message("go"))
            pending = _pending(task)
            assert (pending["kind"], pending["tool"]["name"]) == ("approval", "transfer")
            assert task.metadata["turnkeep"]["pending_input"]["request_id"] == pending["request_id"]
            cancelled = await client.cancel_task(CancelTaskRequest(id=task.id))
            assert cancelled.status.state == TaskState.TASK_STATE_CANCELED
            with pytest.raises(TaskNotCancelableError):
                await client.cancel_task(CancelTaskRequest(id=task.id))
            with pytest.raises(UnsupportedOperationError):
                # an ended task has nothing more to stream
                async for _ in streaming.subscribe(SubscribeToTaskRequest(id=task.id)):
                    pass

    asyncio.run(run())


def test_answer_an_input_required_task_while_subscribed(api: Api, worker: Procs) -> None:
    async def run() -> tuple[Task, list[StreamResponse]]:
        async with (
            a2a(api, "banker") as client,
            a2a(api, "banker", streaming=True) as streaming,
        ):
            task = await _send(client, _message("go"))
            _pending(task)
            seen: list[StreamResponse] = []
            first = asyncio.Event()

            async def subscribe() -> None:
                async for event in streaming.subscribe(SubscribeToTaskRequest(id=task.id)):
                    seen.append(event)
                    first.set()

            follower = asyncio.create_task(subscribe())
            await asyncio.wait_for(first.wait(), 60)
            with pytest.raises(InvalidParamsError):  # not what the response schema says
                await _send(client, _message(data={"approved": "yes"}, task_id=task.id))
            answer = _message(data={"approved": True}, task_id=task.id, context_id=task.context_id)
            done = await _send(client, answer)
            await asyncio.wait_for(follower, 20)
            return done, seen

    done, seen = asyncio.run(run())
    assert done.status.state == TaskState.TASK_STATE_COMPLETED, done
    assert get_artifact_text(done.artifacts[0]).startswith("ok: ")
    assert seen[0].task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
    assert [_state(e) for e in seen][-1] == TaskState.TASK_STATE_COMPLETED
    events = [e.status_update.metadata["turnkeep"]["event"] for e in seen[1:] if _state(e)]
    assert events[0] == "input.resolved" and "tool.completed" in events


def test_same_message_id_reaches_the_same_task(api: Api, worker: Procs) -> None:
    async def run() -> None:
        async with a2a(api) as client:
            mid = uuid.uuid4().hex
            first = await _send(client, _message("once", message_id=mid))
            # a retry without the context it created, and one naming it: the same turn
            retry = await _send(client, _message("once", message_id=mid))
            named = await _send(
                client, _message("once", message_id=mid, context_id=first.context_id)
            )
            assert first.id == retry.id == named.id
            assert get_artifact_text(named.artifacts[0]) == "seen 1: once"
            with pytest.raises(InvalidParamsError) as refused:
                await _send(client, _message("other", message_id=mid))
            assert refused.value.data == {"code": "idempotency_conflict"}
            # the next message of the conversation is a new turn of the same session
            second = await _send(client, _message("twice", context_id=first.context_id))
            assert second.context_id == first.context_id and second.id != first.id
            assert get_artifact_text(second.artifacts[0]) == "seen 2: once | twice"
            listed = await client.list_tasks(ListTasksRequest(context_id=first.context_id))
            assert [t.id for t in listed.tasks] == [second.id, first.id]  # newest first

    asyncio.run(run())


def test_root_endpoint_takes_the_agent_from_the_skill(api: Api, worker: Procs) -> None:
    async def run() -> None:
        async with a2a(api, "") as client:
            with pytest.raises(InvalidParamsError):
                await _send(client, _message("hi"))
            task = await _send(client, _message("hi", metadata={"skill": "memory"}))
            assert get_artifact_text(task.artifacts[0]) == "seen 1: hi"
            # the context names its agent from then on
            more = await _send(client, _message("more", context_id=task.context_id))
            assert get_artifact_text(more.artifacts[0]) == "seen 2: hi | more"
        async with a2a(api, "demo") as other:
            with pytest.raises(TaskNotFoundError):  # another agent's task
                await other.get_task(GetTaskRequest(id=task.id))

    asyncio.run(run())


def test_another_tenant_sees_no_task(api: Api, worker: Procs) -> None:
    async def run() -> None:
        async with a2a(api) as client:
            task = await _send(client, _message("mine"))
        async with a2a(api, token="b") as other:
            with pytest.raises(TaskNotFoundError):
                await other.get_task(GetTaskRequest(id=task.id))
            with pytest.raises(TaskNotFoundError):
                await other.cancel_task(CancelTaskRequest(id=task.id))
            with pytest.raises(TaskNotFoundError):
                await _send(other, _message(data={"approved": True}, task_id=task.id))
            with pytest.raises(TaskNotFoundError):
                await other.get_task(GetTaskRequest(id="not-an-a2a-task"))

    asyncio.run(run())


def test_send_answers_the_task_as_it_is_once_the_wait_is_over(
    service_env: dict[str, str], worker: Procs
) -> None:
    """A turn queued behind a waiting one: after TURNKEEP_MAX_WAIT the task is sent as
    it is (submitted); cancelling the one ahead lets it run."""
    overrides = {"agents": "tests.agents", "broker_url": service_env["TURNKEEP_REDIS_URL"]}
    with serve_api(service_env, max_wait=1.0, **overrides) as short:

        async def run() -> None:
            async with a2a(short, "banker") as client:
                ahead = await _send(client, _message("go"))
                _pending(ahead)
                behind = await _send(client, _message("next", context_id=ahead.context_id))
                assert behind.status.state == TaskState.TASK_STATE_SUBMITTED
                await client.cancel_task(CancelTaskRequest(id=ahead.id))
                for _ in range(40):
                    task = await client.get_task(GetTaskRequest(id=behind.id))
                    if task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED:
                        break
                    await asyncio.sleep(0.25)
                assert task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED, task
                await client.cancel_task(CancelTaskRequest(id=behind.id))

        asyncio.run(run())


def test_the_approvals_of_one_wait_are_shown_and_answered_together(api: Api, worker: Procs) -> None:
    async def run() -> tuple[Task, Task]:
        async with a2a(api, "payroll") as client:
            task = await _send(client, _message("go"))
            first = _pending(task)
            asked = task.metadata["turnkeep"]["pending_inputs"]
            assert [p["step"] for p in asked] == [2, 3, 4]
            assert first["request_id"] == asked[0]["request_id"]
            assert "2 more open" in task.status.message.parts[0].text
            # the second alone, by its id in the metadata
            one = _message(
                data={"approved": False, "reason": "not this one"},
                task_id=task.id,
                metadata={"request_id": asked[1]["request_id"]},
            )
            middle = await _send(client, one)
            assert [p["step"] for p in middle.metadata["turnkeep"]["pending_inputs"]] == [2, 4]
            with pytest.raises(InvalidParamsError):  # not a list of answers
                await _send(client, _message("x", task_id=task.id, metadata={"answers": 3}))
            rest = [
                {"request_id": p["request_id"], "response": {"approved": True}}
                for p in (asked[0], asked[2])
            ]
            both = _message("both", task_id=task.id, metadata={"answers": rest})
            return middle, await _send(client, both)

    middle, done = asyncio.run(run())
    assert middle.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
    assert done.status.state == TaskState.TASK_STATE_COMPLETED, done
    results = get_artifact_text(done.artifacts[0]).split("|")
    assert results[1] == "error: not approved: not this one"
    assert "charged" in results[0] and "charged" in results[2]


def test_cards_describe_a_gated_agents_default(api: Api, worker: Procs) -> None:
    """tests.agents' gated agent declares v1, v2 and v3; tenant a promoted v2. A public
    card knows no tenant: it describes v1, the version of a tenant that promoted none,
    says so, and offers the extended card; the extended card (the SDK's
    get_extended_agent_card, with a token) describes the caller's tenant's default, at
    the agent's endpoint and the root's; a task sent to it runs that version."""
    promoted = api.client("a-admin").post("/v1/agents/gated/versions/2/promote")
    assert promoted.status_code == 200, promoted.text

    async def run() -> dict[str, Any]:
        seen: dict[str, Any] = {}
        async with httpx.AsyncClient(timeout=10) as http:  # no token
            seen["public"] = await A2ACardResolver(http, f"{api.url}/a2a/gated").get_agent_card()
            seen["root"] = await A2ACardResolver(http, api.url).get_agent_card()
        ask = GetExtendedAgentCardRequest()
        async with a2a(api, "gated") as client:
            seen["mine"] = await client.get_extended_agent_card(ask)
            seen["task"] = await _send(client, _message("Who are you?"))
        async with a2a(api, "gated", token="b") as client:
            seen["theirs"] = await client.get_extended_agent_card(ask)
        async with a2a(api, "") as client:
            seen["root_mine"] = await client.get_extended_agent_card(ask)
        return seen

    seen = asyncio.run(run())

    def skill(card: Any, agent: str = "gated") -> str:
        [found] = [s for s in card.skills if s.id == agent]
        return str(found.description)

    public, mine, theirs = seen["public"], seen["mine"], seen["theirs"]
    assert public.version == "1" and public.capabilities.extended_agent_card
    assert "version 1, the version of a tenant that promoted none" in public.description
    assert "version 1, the version of a tenant that promoted none" in skill(seen["root"])
    assert seen["root"].capabilities.extended_agent_card
    assert (mine.name, mine.version) == ("gated", "2")
    assert "version 2, the version your tenant promoted" in mine.description
    assert [i.url for i in mine.supported_interfaces] == [f"{api.url}/a2a/gated"]
    assert theirs.version == "1"
    assert "version 2, the version your tenant promoted" in skill(seen["root_mine"])
    # an agent that is not gated is described at its latest on every card
    assert "'demo', version 1;" in skill(seen["root_mine"], "demo")
    assert "'demo', version 1;" in skill(seen["root"], "demo")
    task = seen["task"]
    assert task.status.state == TaskState.TASK_STATE_COMPLETED, task
    assert get_artifact_text(task.artifacts[0]) == "You are gated v2."
    turn = api.client().get(f"/v1/sessions/{task.context_id}/turns/{task.id}").json()
    assert (turn["agent"], turn["agent_version"]) == ("gated", "2")
