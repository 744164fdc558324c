"""``client.turns``: a session's turns (``/v1/sessions/{sid}/turns…``): admit one, read
it, wait for it, cancel it, answer its input requests, list them, rerun one. The calls
are built here without I/O; ``TurnsApi`` sends them through the sync client, ``AsyncTurnsApi``
through the async one."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

from turnkeep.client import calls
from turnkeep.client.calls import ApiCall, AsyncSend, Config, Messages, Send
from turnkeep.models import Timeline, Turn, TurnPage, TurnUpgrade

_turn = calls.reader(Turn)


def _path(sid: str, tid: str, tail: str = "") -> str:
    return f"/v1/sessions/{sid}/turns/{tid}{tail}"


def admit(
    session_id: str,
    agent: str,
    text_or_messages: Messages,
    *,
    idempotency_key: str | None,
    multitask: str | None,
    output_schema: Mapping[str, Any] | None,
    budget: Mapping[str, Any] | None,
    project: str | None,
    attachments: Sequence[str] | None,
    agent_version: str | None,
    priority: int | None,
    expires_after: int | None,
    metadata: Mapping[str, str] | None,
    session_metadata: Mapping[str, str] | None,
) -> ApiCall[Turn]:
    body: dict[str, Any] = {"agent": agent, "input": calls.messages(text_or_messages)}
    labels = {"metadata": metadata, "session_metadata": session_metadata}
    body.update({k: dict(v) for k, v in labels.items() if v})
    if agent_version is not None:
        body["agent_version"] = agent_version
    if expires_after is not None:
        body["expires_after"] = expires_after
    if priority is not None:
        body["priority"] = priority
    if multitask is not None:
        body["multitask"] = multitask
    if output_schema is not None:
        body["output_schema"] = dict(output_schema)
    if budget is not None:
        body["budget"] = dict(budget)
    if project is not None:
        body["project"] = project
    if attachments:
        body["attachments"] = list(attachments)
    path = f"/v1/sessions/{session_id}/turns"
    return ApiCall("POST", path, _turn, json=body, headers=calls.key(idempotency_key))


def get(session_id: str, turn_id: str) -> ApiCall[Turn]:
    return ApiCall("GET", _path(session_id, turn_id), _turn)


def deadline(timeout: float) -> float:
    """When a ``wait`` of ``timeout`` seconds started now gives up."""
    return time.monotonic() + timeout


def wait_poll(
    config: Config, session_id: str, turn_id: str, until: float
) -> tuple[ApiCall[Turn], bool]:
    """The next request of a ``wait`` that gives up at ``until`` (``deadline``): a long
    poll of at most ``config.poll`` seconds, or, once the time is up, a plain read that
    is the last (``True``). ``wait`` returns a turn that is terminal or awaits input."""
    left = until - time.monotonic()
    if left <= 0:
        return get(session_id, turn_id), True
    chunk = min(left, config.poll)
    call = ApiCall(
        "GET",
        _path(session_id, turn_id),
        _turn,
        params={"wait": f"{max(chunk, 0.001):.3f}"},
        timeout=chunk + config.timeout,
    )
    return call, False


def waited(turn: Turn, last: bool) -> bool:
    """A ``wait`` answers with this turn."""
    return last or turn.terminal or turn.awaiting_input


def cancel(session_id: str, turn_id: str) -> ApiCall[Turn]:
    return ApiCall("POST", _path(session_id, turn_id, "/cancel"), _turn)


def answer(
    session_id: str, turn_id: str, request_id: str, body: Mapping[str, Any]
) -> ApiCall[Turn]:
    path = _path(session_id, turn_id, f"/inputs/{request_id}")
    return ApiCall("POST", path, _turn, json=dict(body))


def answer_many(
    session_id: str, turn_id: str, answers: Mapping[str, Mapping[str, Any]]
) -> ApiCall[Turn]:
    """Several open requests of the turn's wait at once: {request id: answer}."""
    body = {"answers": [{"request_id": r, "response": dict(a)} for r, a in answers.items()]}
    return ApiCall("POST", _path(session_id, turn_id, "/inputs"), _turn, json=body)


def decide(
    session_id: str, turn_id: str, request_id: str, approved: bool, reason: str
) -> ApiCall[Turn]:
    """The answer to an approval request: ``approve`` and ``deny``."""
    body: dict[str, Any] = {"approved": approved, **({"reason": reason} if reason else {})}
    return answer(session_id, turn_id, request_id, body)


def timeline(session_id: str, turn_id: str) -> ApiCall[Timeline]:
    return ApiCall("GET", _path(session_id, turn_id, "/timeline"), calls.reader(Timeline))


def upgrade(session_id: str, turn_id: str) -> ApiCall[TurnUpgrade]:
    return ApiCall("POST", _path(session_id, turn_id, "/upgrade"), calls.reader(TurnUpgrade))


def listing(session_id: str, limit: int, after: str | None) -> ApiCall[TurnPage]:
    path = f"/v1/sessions/{session_id}/turns"
    return ApiCall("GET", path, calls.reader(TurnPage), params=calls.page(limit, after))


def rerun(
    session_id: str,
    turn_id: str,
    from_step: int,
    *,
    replace: Mapping[str, Any] | None,
    fork: bool,
    new_session_id: str | None,
    idempotency_key: str | None,
) -> ApiCall[Turn]:
    body: dict[str, Any] = {"from_step": from_step}
    if replace is not None:
        body["replace"] = dict(replace)
    if fork:
        body["fork"] = True
    if new_session_id is not None:
        body["session_id"] = new_session_id
    path = _path(session_id, turn_id, "/rerun")
    return ApiCall("POST", path, _turn, json=body, headers=calls.key(idempotency_key))


class TurnsApi:
    """``client.turns`` of the sync client."""

    def __init__(self, send: Send, config: Config) -> None:
        self._send = send
        self._config = config

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
        return self._send(
            admit(
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
        return self._send(get(session_id, turn_id))

    def wait(self, session_id: str, turn_id: str, timeout: float) -> Turn:
        """The turn once terminal or parked on an open input request (someone must
        answer it), or as it is after ``timeout`` seconds (long polls of at most
        ``poll`` seconds each)."""
        until = deadline(timeout)
        while True:
            call, last = wait_poll(self._config, session_id, turn_id, until)
            turn = self._send(call)
            if waited(turn, last):
                return turn

    def cancel(self, session_id: str, turn_id: str) -> Turn:
        """Request cancellation; 409 ``turn_not_active`` once the turn has ended."""
        return self._send(cancel(session_id, turn_id))

    def answer(
        self, session_id: str, turn_id: str, request_id: str, body: Mapping[str, Any]
    ) -> Turn:
        """Answer the turn's open input request (e.g. ``{"approved": True}``)."""
        return self._send(answer(session_id, turn_id, request_id, body))

    def answer_many(
        self, session_id: str, turn_id: str, answers: Mapping[str, Mapping[str, Any]]
    ) -> Turn:
        """Answer several open requests of the turn's wait at once, all or none
        (``{request_id: answer}``: the approvals of one model answer are asked
        together; ``Turn.pending_inputs`` lists them)."""
        return self._send(answer_many(session_id, turn_id, answers))

    def approve(self, session_id: str, turn_id: str, request_id: str, reason: str = "") -> Turn:
        """Approve the open approval request (``{"approved": true}``)."""
        return self._send(decide(session_id, turn_id, request_id, True, reason))

    def deny(self, session_id: str, turn_id: str, request_id: str, reason: str = "") -> Turn:
        """Deny the open approval request (``{"approved": false}``)."""
        return self._send(decide(session_id, turn_id, request_id, False, reason))

    def timeline(self, session_id: str, turn_id: str) -> Timeline:
        """The turn's attempts, steps and waits (no message content)."""
        return self._send(timeline(session_id, turn_id))

    def upgrade(self, session_id: str, turn_id: str) -> TurnUpgrade:
        """Move the turn to the newest version of its agent at its next safe point,
        pinned or not (admin role; 409 ``turn_not_active`` once it has ended)."""
        return self._send(upgrade(session_id, turn_id))

    def list(self, session_id: str, *, limit: int = 50, after: str | None = None) -> TurnPage:
        """A page of the session's turns, newest first (``after``: the last ``next``)."""
        return self._send(listing(session_id, limit, after))

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
        return self._send(
            rerun(
                session_id,
                turn_id,
                from_step,
                replace=replace,
                fork=fork,
                new_session_id=new_session_id,
                idempotency_key=idempotency_key,
            )
        )


class AsyncTurnsApi:
    """``client.turns`` of the async client: ``TurnsApi``'s methods, awaited."""

    def __init__(self, send: AsyncSend, config: Config) -> None:
        self._send = send
        self._config = config

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
        return await self._send(
            admit(
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
        return await self._send(get(session_id, turn_id))

    async def wait(self, session_id: str, turn_id: str, timeout: float) -> Turn:
        until = deadline(timeout)
        while True:
            call, last = wait_poll(self._config, session_id, turn_id, until)
            turn = await self._send(call)
            if waited(turn, last):
                return turn

    async def cancel(self, session_id: str, turn_id: str) -> Turn:
        return await self._send(cancel(session_id, turn_id))

    async def answer(
        self, session_id: str, turn_id: str, request_id: str, body: Mapping[str, Any]
    ) -> Turn:
        return await self._send(answer(session_id, turn_id, request_id, body))

    async def answer_many(
        self, session_id: str, turn_id: str, answers: Mapping[str, Mapping[str, Any]]
    ) -> Turn:
        return await self._send(answer_many(session_id, turn_id, answers))

    async def approve(
        self, session_id: str, turn_id: str, request_id: str, reason: str = ""
    ) -> Turn:
        return await self._send(decide(session_id, turn_id, request_id, True, reason))

    async def deny(self, session_id: str, turn_id: str, request_id: str, reason: str = "") -> Turn:
        return await self._send(decide(session_id, turn_id, request_id, False, reason))

    async def timeline(self, session_id: str, turn_id: str) -> Timeline:
        return await self._send(timeline(session_id, turn_id))

    async def upgrade(self, session_id: str, turn_id: str) -> TurnUpgrade:
        return await self._send(upgrade(session_id, turn_id))

    async def list(self, session_id: str, *, limit: int = 50, after: str | None = None) -> TurnPage:
        return await self._send(listing(session_id, limit, after))

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
        return await self._send(
            rerun(
                session_id,
                turn_id,
                from_step,
                replace=replace,
                fork=fork,
                new_session_id=new_session_id,
                idempotency_key=idempotency_key,
            )
        )
