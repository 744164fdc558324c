"""Admission: a turn in, over any surface (api/service/__init__.py).

The turn is admitted by the one admission every turn takes (store/admission.py: the
quotas, the session's TTL, metadata, priority and the fair ticket); what the surface
checks first (role, agent, bounds, project, attachments) and what a refusal answers
are here.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any

from turnkeep.api.auth import Principal
from turnkeep.api.errors import ProjectMismatch, ServiceError, WebhookNotConfigured
from turnkeep.api.resources import ApiResources
from turnkeep.api.service import attachments, bounds, callbacks, defaults, projects
from turnkeep.api.service.access import may_write, visible
from turnkeep.api.service.requests import TurnRequest
from turnkeep.runtime import admission as recipe
from turnkeep.runtime import webhooks
from turnkeep.runtime.admission import TurnInput
from turnkeep.runtime.errors import UnknownAgent
from turnkeep.runtime.multitask import Multitask
from turnkeep.runtime.obs import tracing
from turnkeep.runtime.obs.faults import FaultPoint, hit
from turnkeep.store import admission as admitting
from turnkeep.store.errors import (
    IdempotencyConflict,
    NotFound,
    SessionDeleted,
    StoreError,
    Unavailable,
)
from turnkeep.store.records import Admission, WebhookSpec


def admit(
    services: ApiResources,
    principal: Principal,
    session_id: str,
    tid: str,
    body: TurnRequest,
    *,
    webhook: WebhookSpec | None = None,
    surface: str = "http",
    timings: dict[str, float] | None = None,
) -> Admission:
    """Hash and admit (blocking): one statement, one round trip (``reject`` and
    ``interrupt``, or with a workflow node's ``webhook``: one short transaction, see
    ``Store.turns.admit``). The request's bounds are checked first (bounds.py), the
    quotas on active turns inside the statement, after the replay check.

    A turn naming a ``project`` (one more read: the project, ``NotFound`` unless it is
    the caller's) pins the project's override of its agent in its input and hash; a
    session in another project than the turn names is ``ProjectMismatch``, one in a
    project of another owner ``NotFound`` (``_refusal``).

    With tracing on, the answered admission is a span of the turn's trace, whichever
    ``surface`` it came by (http, workflow, mcp, a2a): the trace's root when it created
    the turn, a child of that root for a replay.

    ``timings`` (the bench's, api/timings.py) gets the pieces' durations: checks,
    hash, statement."""
    started = time.time_ns()
    clock = time.perf_counter() if timings is not None else 0.0
    metrics = services.metrics
    settings = services.settings
    pinned: dict[str, Any] | None = None
    try:
        may_write(principal)
        if webhook is None and body.callback_url is not None:
            webhook = callback(services, body.callback_url)
        # the version named, else the default (a gated agent's: the tenant's promoted one)
        agent = defaults.agent_for(services, principal.tenant, body.agent, body.agent_version)
        bounds.check_turn(body, settings)
        if body.project is not None:
            pinned = projects.pin(services, principal, body.project, agent.name)
        if body.attachments:
            # the session's attachments are looked at: not another owner's
            visible(services, principal, session_id, missing_ok=True)
        attachments.check_references(services, principal.tenant, session_id, tid, body.attachments)
    except (StoreError, ServiceError, UnknownAgent) as exc:
        metrics.admitted(exc.code)
        raise
    messages = body.messages()
    budget = body.budget_json()
    metadata, session_metadata = body.labels()
    schema = body.output_schema if body.output_schema is not None else agent.output_schema
    agent_hash = services.agent_hash(agent)
    interrupt = body.multitask is Multitask.INTERRUPT
    if interrupt:
        hit(FaultPoint.BEFORE_INTERRUPT)
    if timings is not None:
        timings["checks"] = time.perf_counter() - clock
        clock = time.perf_counter()
    try:
        # the one admission every turn takes (store/admission.py)
        admission = admitting.admit(
            services.store,
            settings,
            admitting.Ask(
                source=admitting.Source(surface.partition(".")[0]),
                tenant_id=principal.tenant,
                session_id=session_id,
                turn_id=tid,
                by=principal.subject,
                agent_name=agent.name,
                agent_hash=agent_hash,
                turn_input=TurnInput(messages, attachments=body.attachments or (), project=pinned),
                output_schema=schema,
                budget=budget,
                agent_version=agent.version,
                on_deploy=agent.on_deploy.value,
                project_id=body.project,
                metadata=metadata,
                session_metadata=session_metadata,
                multitask=body.multitask,
                webhook=webhook,
                # the session's own TTL, when the request names one (docs/erasure.md)
                expires_after=body.expires_after,
                priority=body.priority,
            ),
            timings=timings,
        )
    except IdempotencyConflict as exc:
        admission = _conflicted(services, principal, session_id, tid, body, pinned, exc)
    except StoreError as exc:
        refusal = _refusal(services, principal, session_id, body.project, exc)
        metrics.admitted(refusal.code)
        if refusal is exc:
            raise
        raise refusal from None
    if timings is not None:
        timings["hash"] = time.perf_counter() - clock - timings["statement"]
    if interrupt:
        hit(FaultPoint.AFTER_INTERRUPT)
    admission = _as_asked(services, admission, body, webhook)
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


def callback(services: ApiResources, url: str) -> WebhookSpec:
    """The outbox row of a turn's ``callback_url`` (no workflow run or node: ``""``);
    a host that is not public is refused (api/service/callbacks.py)."""
    secret = services.settings.webhooks.secret.get_secret_value()
    if not secret:
        raise WebhookNotConfigured("no webhook signing secret is configured")
    callbacks.check(services, url)
    return WebhookSpec(
        run_id="",
        node_id="",
        url=url,
        secret_id=webhooks.secret_id(secret),
        delivery_id=webhooks.new_delivery_id(),
    )


def _as_asked(
    services: ApiResources, admission: Admission, body: TurnRequest, webhook: WebhookSpec | None
) -> Admission:
    """A replay naming a callback must name the stored one (else a conflict); the
    delivery's priority as the request asked."""
    turn = admission.turn
    named = webhook is not None and webhook.run_id == "" and body.callback_url is not None
    if not admission.created and named:
        stored = services.store.outbox.get_webhook(turn.tenant_id, turn.session_id, turn.turn_id)
        if (None if stored is None else stored.url) != body.callback_url:
            services.metrics.admitted(IdempotencyConflict.code)
            raise IdempotencyConflict(
                f"turn {turn.turn_id!r} was admitted with another callback_url"
            )
    if body.priority is not None and admission.priority is None:
        # a replay across a deploy: the stored turn, delivered as asked
        admission = dataclasses.replace(admission, priority=body.priority)
    return admission


def _conflicted(
    services: ApiResources,
    principal: Principal,
    session_id: str,
    tid: str,
    body: TurnRequest,
    pinned: dict[str, Any] | None,
    conflict: IdempotencyConflict,
) -> Admission:
    """The stored turn when the conflict is a replay across a deploy, in the caller's
    own session; else the refusal, raised."""
    refusal = _refusal(services, principal, session_id, body.project, conflict)
    if refusal is conflict:
        replay = _replay_across_deploy(services, principal, session_id, tid, body, pinned)
        if replay is not None:
            return replay
    services.metrics.admitted(refusal.code)
    if refusal is conflict:
        raise conflict
    raise refusal from None


def _replay_across_deploy(
    services: ApiResources,
    principal: Principal,
    session_id: str,
    tid: str,
    body: TurnRequest,
    pinned: dict[str, Any] | None,
) -> Admission | None:
    """A replay that names no version, of a turn admitted under another version of the
    same agent (a deploy came in between): the same request, so the stored turn, when
    the request hashes as the stored input under the definition the turn was admitted
    with (that version's default output schema, if it is still declared)."""
    if body.agent_version is not None:
        return None
    try:
        stored = services.store.reads.get_turn(principal.tenant, session_id, tid)
    except StoreError:
        return None
    if stored.agent_name != body.agent:
        return None
    then = services.registry.by_hash(stored.agent_hash)
    default = then.output_schema if then is not None else stored.output_schema
    schema = body.output_schema if body.output_schema is not None else default
    metadata, session_metadata = body.labels()
    again = recipe.identity_hash(
        TurnInput(body.messages(), attachments=body.attachments or (), project=pinned),
        agent_hash=stored.agent_hash,
        output_schema=schema,
        budget=body.budget_json(),
        metadata=metadata,
        session_metadata=session_metadata,
    )
    if again != stored.input_hash:
        return None
    return Admission(turn=stored, created=False)


def _refusal(
    services: ApiResources,
    principal: Principal,
    session_id: str,
    project: str | None,
    exc: StoreError,
) -> StoreError | ProjectMismatch:
    """What a refused admission answers (one more read, on refusal only): for a session
    in a project of another owner ``NotFound``, whatever refused it (another agent, a
    replay's other hash, a full lane); for one in another project than ``project``
    ``ProjectMismatch``; else the store's own refusal."""
    if isinstance(exc, Unavailable):
        return exc
    try:
        access = services.store.projects.session_access(principal.tenant, session_id)
    except NotFound:
        return exc  # no session (a tenant's quota refused a new one)
    if access.project_id is not None and access.owner != principal.subject:
        return NotFound("session not found")
    if isinstance(exc, SessionDeleted):
        return exc
    if access.project_id != project:
        return ProjectMismatch()
    return exc


def after_admission(services: ApiResources, admission: Admission) -> None:
    """Publish the committed ``turn.accepted`` and the cancellations an interrupt wrote
    (as the store returned them, no read-back), then enqueue: the lane moves on to the
    new turn once the turns before it have ended."""
    if admission.event is not None:
        # a failed publish is logged by the publisher: readers fill the gap from the journal
        services.publisher.committed(admission.event, *admission.interrupted)
    # the fair ticket, at the priority asked (store/admission.py)
    admitting.release(services.producer.enqueue, admission)
