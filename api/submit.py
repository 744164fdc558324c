"""The submit path: admit, read, wait, cancel and answer as transport-free functions.

Every surface (the HTTP routes, MCP, A2A, ACP, workflow nodes) calls these with the
caller's ``Principal``, so idempotency, the 409 on a reused id with other input,
tenancy, roles, bounds and quotas and the journal behave the same everywhere. They
raise typed errors only (``store.errors``, ``runtime.errors`` and ``api.errors``);
each surface translates them at its edge (HTTP: api/problems.py).

Roles: a ``reader`` may read and follow, never write: ``admit``, ``cancel`` and
``answer`` refuse it (``ForbiddenRole``) before they look anything up.

Projects (api/projects.py): a session in a project is its owner's alone. Every
function here that reaches a session checks the project's stored owner first
(``visible``: one read of the session and its project by primary key) and answers
anyone else exactly as for a missing session; so does every route that reads the
store itself. A session's project and a project's owner never change, so a check
made before the read holds for it.

A write returns what it committed; the work that follows it (publish the events,
enqueue the session) is a separate ``after_*`` function, because HTTP runs it once
the answer went out while other surfaces run it at once (``settle``).
"""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import anyio
import jsonschema
import redis

from api import attachments, bounds
from api import projects as project_api
from api.auth import Principal
from api.errors import AnswerInvalid, ForbiddenRole, InvalidKey, RequestInvalid
from api.live import Lagging, LiveFeed
from api.schemas import ID_REGEX, TurnRequest, has_nul
from api.services import Services
from api.waiting import wait_for_turn
from runtime import inputs, plan, projects, tracing
from runtime.errors import UnknownAgent
from runtime.faults import FaultPoint, hit
from runtime.hashing import input_hash, sha256_hex
from runtime.inputs import InputKind, Role
from runtime.multitask import Multitask
from runtime.states import EventType
from runtime.validation import validate
from store.errors import (
    InputExpired,
    InputForbidden,
    InputNotOpen,
    NotFound,
    StoreError,
    Unavailable,
)
from store.records import Admission, EventRecord, TurnRecord, WebhookSpec

_KEY = re.compile(ID_REGEX)


def turn_id(key: str | None) -> str:
    """The turn id an idempotency key names, or a new one."""
    if key is None:
        return uuid.uuid4().hex
    if not _KEY.fullmatch(key):
        raise InvalidKey("an idempotency key must match [A-Za-z0-9._-]{1,128}")
    return key


def may_write(principal: Principal) -> None:
    """``ForbiddenRole`` for a principal that may only read."""
    if principal.role == Role.READER:
        raise ForbiddenRole("a reader may not write")


# -- admission ---------------------------------------------------------------------


def admit(
    services: Services,
    principal: Principal,
    session_id: str,
    tid: str,
    body: TurnRequest,
    *,
    webhook: WebhookSpec | None = None,
    surface: str = "http",
) -> Admission:
    """Hash and admit (blocking): one statement, one round trip (``reject`` and
    ``interrupt``, or with a workflow node's ``webhook``: one short transaction, see
    ``Store.admit``). The request's bounds are checked first (api/bounds.py), the
    quotas on active turns inside the statement, after the replay check.

    A turn naming a ``project`` (one more read: the project, ``NotFound`` unless it is
    the caller's) pins the project's override of its agent in its input and hash; a
    session in another project than the turn names is ``ProjectMismatch``, one in a
    project of another owner ``NotFound`` (``_refusal``).

    With tracing on, the answered admission is a span of the turn's trace, whichever
    ``surface`` it came by (http, workflow, mcp, a2a): the trace's root when it created
    the turn, a child of that root for a replay."""
    started = time.time_ns()
    metrics = services.metrics
    settings = services.settings
    pinned: dict[str, Any] | None = None
    try:
        may_write(principal)
        agent = services.registry.get(body.agent)
        bounds.check_turn(body, settings)
        if body.project is not None:
            pinned = project_api.pin(services, principal, body.project, agent.name)
        if body.attachments:
            # the session's attachments are looked at: not another owner's
            visible(services, principal, session_id, missing_ok=True)
        attachments.check_references(services, principal.tenant, session_id, tid, body.attachments)
    except (ForbiddenRole, RequestInvalid) as exc:
        metrics.admitted(exc.code)
        raise
    except UnknownAgent:
        metrics.admitted("unknown_agent")
        raise
    except StoreError as exc:
        metrics.admitted(exc.code)
        raise
    messages = body.messages()
    budget = body.budget_json()
    schema = body.output_schema if body.output_schema is not None else agent.output_schema
    agent_hash = services.agent_hash(agent)
    interrupt = body.multitask is Multitask.INTERRUPT
    if interrupt:
        hit(FaultPoint.BEFORE_INTERRUPT)
    turn_input = attachments.turn_input(messages, body.attachments)
    if pinned is not None:
        turn_input[projects.INPUT_KEY] = pinned
    try:
        admission = services.store.admit(
            tenant_id=principal.tenant,
            session_id=session_id,
            turn_id=tid,
            agent_name=agent.name,
            agent_hash=agent_hash,
            input_hash=projects.hashed(
                attachments.hashed(
                    input_hash(
                        messages=messages,
                        agent_hash=agent_hash,
                        output_schema=schema,
                        budget=budget,
                    ),
                    body.attachments,
                ),
                pinned,
            ),
            input=turn_input,
            output_schema=schema,
            budget=budget,
            submitted_by=principal.subject,
            multitask=body.multitask,
            webhook=webhook,
            max_queued_session=settings.max_queued_per_session,
            max_queued_tenant=settings.max_queued_per_tenant,
            project_id=body.project,
        )
    except StoreError as exc:
        refusal = _refusal(services, principal, session_id, body.project, exc)
        metrics.admitted(refusal.code)
        if refusal is exc:
            raise
        raise refusal from None
    if interrupt:
        hit(FaultPoint.AFTER_INTERRUPT)
    metrics.admitted("created" if admission.created else "replayed")
    tracing.record(
        "turnkeep.admit",
        principal.tenant,
        session_id,
        tid,
        start_ns=started,
        root=admission.created,
        attributes={
            "turnkeep.surface": surface,
            "turnkeep.agent": agent.name,
            "turnkeep.admission": "created" if admission.created else "replayed",
        },
    )
    return admission


def _refusal(
    services: Services,
    principal: Principal,
    session_id: str,
    project: str | None,
    exc: StoreError,
) -> StoreError:
    """What a refused admission answers (one more read, on refusal only): for a session
    in a project of another owner ``NotFound``, whatever refused it (another agent, a
    replay's other hash, a full lane); for one in another project than ``project``
    ``ProjectMismatch``; else the store's own refusal."""
    if isinstance(exc, Unavailable):
        return exc
    try:
        found, owner = services.store.session_project(principal.tenant, session_id)
    except NotFound:
        return exc  # no session (a tenant's quota refused a new one)
    if found is not None and owner != principal.subject:
        return NotFound("session not found")
    if found != project:
        return project_api.ProjectMismatch()
    return exc


def after_admission(services: Services, admission: Admission) -> None:
    """Publish the committed ``turn.accepted`` and the cancellations an interrupt wrote
    (as the store returned them, no read-back), then enqueue: the lane moves on to the
    new turn once the turns before it have ended."""
    turn = admission.turn
    if admission.event is not None:
        # a failed publish is logged by the publisher: readers fill the gap from the journal
        services.publisher.committed(admission.event, *admission.interrupted)
    if not turn.state.terminal:
        # also on replay: a duplicate run_session is harmless, a missing one is slow
        services.producer.enqueue(turn.tenant_id, turn.session_id)


# -- reads -------------------------------------------------------------------------


def visible(
    services: Services,
    principal: Principal,
    session_id: str,
    *,
    missing: str = "session not found",
    missing_ok: bool = False,
) -> None:
    """``NotFound(missing)`` unless the session exists for the principal's tenant and
    is not in a project of another owner (the project's stored owner, read now; an
    admin is no owner). ``missing`` is what the caller answers for a session that does
    not exist (``turn not found`` on a turn's routes), so both answers are one;
    ``missing_ok``: no session is no refusal (an admission creates it)."""
    try:
        project, owner = services.store.session_project(principal.tenant, session_id)
    except NotFound:
        if missing_ok:
            return
        raise NotFound(missing) from None
    if project is not None and owner != principal.subject:
        raise NotFound(missing)


def read(services: Services, principal: Principal, session_id: str, tid: str) -> TurnRecord:
    visible(services, principal, session_id, missing="turn not found")
    return services.store.get_turn(principal.tenant, session_id, tid)


def turns_of(services: Services, principal: Principal, session_id: str) -> list[TurnRecord]:
    """Every turn of the session in admission order; none for a session the principal
    may not see, as for a missing one (A2A's task listing)."""
    try:
        visible(services, principal, session_id)
    except NotFound:
        return []
    return services.store.list_turns(principal.tenant, session_id)


async def wait(
    services: Services,
    principal: Principal,
    session_id: str,
    tid: str,
    seconds: float,
    *,
    until_input: bool = False,
) -> TurnRecord:
    """The turn once terminal (``until_input``: or waiting for someone's answer), or as
    it is after ``seconds``."""
    await services.run(visible, services, principal, session_id, missing="turn not found")
    return await wait_for_turn(
        services, principal.tenant, session_id, tid, seconds, until_input=until_input
    )


# -- cancellation --------------------------------------------------------------------


@dataclass(frozen=True)
class Cancelled:
    turn: TurnRecord
    #: what the statement committed (nothing when the request was already recorded)
    events: tuple[EventRecord, ...]


def cancel(services: Services, principal: Principal, session_id: str, tid: str) -> Cancelled:
    """Cancel a turn: at once when no worker is stepping it (queued, waiting, parked),
    else at its worker's next safe point. ``TurnNotActive`` once it ended."""
    may_write(principal)
    visible(services, principal, session_id, missing="turn not found")
    hit(FaultPoint.BEFORE_CANCEL)
    events = services.store.request_cancel(
        principal.tenant, session_id, tid, subject=principal.subject
    )
    hit(FaultPoint.AFTER_CANCEL)
    return Cancelled(services.store.get_turn(principal.tenant, session_id, tid), events)


def after_cancel(services: Services, done: Cancelled) -> None:
    services.publisher.committed(*done.events)
    if done.turn.state.terminal and done.events:
        # settled here, not by a worker: the lane's next turn may run now
        services.producer.enqueue(done.turn.tenant_id, done.turn.session_id)
        cancel_children(services, done.turn)


def cancel_children(services: Services, turn: TurnRecord) -> None:
    """A parent cancelled while it waited on its delegated children: they are cancelled
    too (best effort: a child also stops by itself once it sees its parent ended)."""
    store, tenant = services.store, turn.tenant_id
    for e in store.turn_events(tenant, turn.session_id, turn.turn_id):
        if e.type != EventType.INPUT_REQUESTED or e.data.get("kind") != InputKind.DELEGATION:
            continue
        for child in (e.data.get("detail") or {}).get("children") or []:
            try:
                events = store.request_cancel(
                    tenant, child["session_id"], child["turn_id"], subject=turn.submitted_by
                )
            except StoreError:
                continue  # ended already, or never admitted
            services.publisher.committed(*events)
            services.producer.enqueue(tenant, child["session_id"])


# -- answers to input requests --------------------------------------------------------


def open_request(
    services: Services, principal: Principal, session_id: str, tid: str, rid: str
) -> tuple[TurnRecord, dict[str, Any]]:
    """The turn and its open request ``rid``, or the typed refusal: ``NotFound`` for a
    request this tenant never saw, ``InputExpired``, ``InputNotOpen`` once answered."""
    turn = services.store.get_turn(principal.tenant, session_id, tid)
    pending = turn.pending_input
    if pending and pending.get("request_id") == rid:
        if pending.get("resolved"):
            if (pending.get("response") or {}).get("expired"):
                raise InputExpired("the input request expired unanswered")
            raise InputNotOpen("the input request was already answered")
        if inputs.expired(pending):
            raise InputExpired("the input request expired unanswered")
        return turn, pending
    events = services.store.turn_events(principal.tenant, session_id, tid)
    if not any(
        e.type == EventType.INPUT_REQUESTED and e.data.get("request_id") == rid for e in events
    ):
        raise NotFound("input request not found")
    if (plan.answer(events, rid) or {}).get("expired"):
        raise InputExpired("the input request expired unanswered")
    raise InputNotOpen("the input request was already answered or is no longer open")


@dataclass(frozen=True)
class Answered:
    turn: TurnRecord
    event: EventRecord


def answer(
    services: Services,
    principal: Principal,
    session_id: str,
    tid: str,
    rid: str,
    body: dict[str, Any],
) -> Answered:
    """Answer an open request once, as its bound response schema says."""
    may_write(principal)
    visible(services, principal, session_id, missing="turn not found")
    turn, pending = open_request(services, principal, session_id, tid, rid)
    bound = pending.get("answered_by") or {"subject": turn.submitted_by}
    if not inputs.may_answer(bound, subject=principal.subject, role=principal.role):
        raise InputForbidden("this principal may not answer the request")
    try:
        validate(body, pending["response_schema"])
    except jsonschema.ValidationError as exc:
        path = ".".join(str(p) for p in exc.absolute_path)
        raise AnswerInvalid("body." + path if path else "body", exc.message) from None
    if has_nul(body):
        raise AnswerInvalid("body", "must not contain U+0000 (NUL)")
    response, digest = body, sha256_hex(body)
    if inputs.secret(str(pending.get("kind"))):
        # credentials wait in Redis for the tool; Postgres keeps only their hash
        expires = datetime.fromisoformat(str(pending["expires_at"]))
        ttl = (expires - datetime.now(UTC)).total_seconds()
        services.secrets.put(principal.tenant, session_id, tid, rid, body, ttl=ttl)
        response = {"secret": True}
    hit(FaultPoint.BEFORE_ANSWER)
    event = services.store.resolve_input(
        principal.tenant,
        session_id,
        tid,
        rid,
        response=response,
        response_hash=digest,
        subject=principal.subject,
    )
    hit(FaultPoint.AFTER_ANSWER)
    return Answered(services.store.get_turn(principal.tenant, session_id, tid), event)


def after_answer(services: Services, done: Answered) -> None:
    services.publisher.committed(done.event)
    services.producer.enqueue(done.event.tenant_id, done.event.session_id)


# -- following a session ----------------------------------------------------------------


@dataclass(frozen=True)
class Delta:
    """Live model text of a step, never persisted (a stream may miss some)."""

    turn_id: str
    step: int
    text: str


async def follow(
    services: Services,
    principal: Principal,
    session_id: str,
    *,
    after: int = 0,
    until: Callable[[EventRecord], bool] | None = None,
    deltas: bool = False,
    poll: float = 1.0,
) -> AsyncGenerator[EventRecord | Delta, None]:
    """Every committed event of the session with seq > ``after``, in seq order, each
    once, read from the journal; the live channel only wakes the reader (and, with
    ``deltas``, brings live model text between commits). Without Redis the journal is
    re-read every ``poll`` seconds. Ends after an event ``until`` accepts; else runs
    until the caller stops iterating. Raises what ``Store.list_events`` raises
    (``NotFound``, ``CursorAhead``, ``ResyncRequired``)."""
    await services.run(visible, services, principal, session_id)
    try:
        feed: LiveFeed | None = await LiveFeed.open(services.aredis, principal.tenant, session_id)
    except (redis.RedisError, TimeoutError):
        feed = None
    cursor = after
    try:
        while True:
            events, _ = await services.run(
                services.store.list_events, principal.tenant, session_id, after=cursor
            )
            for event in events:
                cursor = event.seq
                yield event
                if until is not None and until(event):
                    return
            if len(events) == FOLLOW_PAGE:
                continue  # more to read before waiting
            if feed is None:
                await anyio.sleep(poll)
                continue
            try:
                payload = await feed.next(poll)
            except (redis.RedisError, Lagging):
                await feed.close()
                feed = None
                continue
            if payload is not None and deltas and payload.get("kind") == "delta":
                yield Delta(str(payload["turn_id"]), int(payload["step"]), str(payload["text"]))
    finally:
        if feed is not None:
            await feed.close()


#: events one journal read of ``follow`` takes (Store.list_events's default page)
FOLLOW_PAGE = 500
