"""The one admission: every turn, whatever brought it (an API surface, a workflow node,
a bridge, a schedule's tick or a follow-up, an experiment's case or its judge, a
delegated child, a rerun), is admitted by ``admit`` here, and nowhere else calls the
admission statements (``Store.turns.admit``, ``Store.reruns.admit_rerun``) or the input's recipe
(``turnkeep.runtime.admission.admit``): tests/unit/test_one_admission.py holds it.

What it applies, in one place, by the turn's ``Source`` (``RULES``; the table in
docs/architecture.md, "One admission", says why where one does not apply):

- roles: a schedule's tick is admitted as its creator only while a token of the
  creator's tenant still stands for it with a role that may write (``CreatorRevoked``
  otherwise). The surfaces check their caller before they ask (api/service/access.py
  ``may_write``): the caller is there, with its role, at that moment.
- the queued quotas (``TURNKEEP_MAX_QUEUED_PER_SESSION``, ``_PER_TENANT``), inside the
  statement, after its replay check;
- the session's TTL: the tenant's default (``ErasureSettings.session_ttl_for``) is passed on
  every admission, so a session it creates gets it and one it admits into has its
  expiry moved, never cleared (docs/erasure.md);
- metadata and priority, as the source asked (priority rides on the ``Admission`` to
  the enqueue);
- the fair ticket and max_running: ``release`` sends the session after the commit
  through the producer's fair ready sets (store/fair.py), and the worker's claim of
  its head applies the tenant's max_running there (store/max_running.py, held in
  store/held.py), whichever source admitted it.

The input's identity (its hash) is runtime/admission.py's one recipe.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from functools import lru_cache
from typing import Any, Protocol

from turnkeep.runtime import admission as recipe
from turnkeep.runtime.admission import TurnInput
from turnkeep.runtime.multitask import Multitask
from turnkeep.runtime.settings import Settings
from turnkeep.runtime.tokens import TenantRole, TokenTable
from turnkeep.store.errors import CreatorRevoked
from turnkeep.store.new_turn import Bounds, NewTurn
from turnkeep.store.records import Admission, WebhookSpec


class Source(StrEnum):
    """What brought a turn (the ACP agent is a client of the HTTP surface)."""

    HTTP = "http"
    MCP = "mcp"
    A2A = "a2a"
    WORKFLOW = "workflow"
    BRIDGE = "bridge"
    SCHEDULE = "schedule"
    FOLLOWUP = "followup"
    EXPERIMENT = "experiment"
    JUDGE = "judge"
    CHILD = "child"
    RERUN = "rerun"


@dataclass(frozen=True)
class Rule:
    """Which of the bounds a source's turns answer (the TTL, metadata, priority, the
    fair ticket and max_running apply to every source)."""

    #: the per-session queued quota
    session_quota: bool
    #: the per-tenant queued quota
    tenant_quota: bool
    #: the submitter's role looked up again now (it asked earlier, not in a request)
    recheck_creator: bool


_CALLER = Rule(session_quota=True, tenant_quota=True, recheck_creator=False)

#: docs/architecture.md's table says the same, and why where a bound does not apply
RULES: Mapping[Source, Rule] = {
    Source.HTTP: _CALLER,
    Source.MCP: _CALLER,
    Source.A2A: _CALLER,
    Source.WORKFLOW: _CALLER,
    Source.BRIDGE: _CALLER,
    Source.RERUN: _CALLER,
    Source.SCHEDULE: Rule(session_quota=True, tenant_quota=True, recheck_creator=True),
    # its creator is the turn that asked for it, whose submitter may be a bridge's
    # binding or an experiment's creator: no token to look up
    Source.FOLLOWUP: _CALLER,
    # one turn per case (and judge) session: only the tenant's bound means anything
    Source.EXPERIMENT: Rule(session_quota=False, tenant_quota=True, recheck_creator=False),
    Source.JUDGE: Rule(session_quota=False, tenant_quota=True, recheck_creator=False),
    # part of its parent's step, already admitted: bounded by the delegation's fan-out
    # and depth; a refusal would fail a turn the tenant was granted
    Source.CHILD: Rule(session_quota=False, tenant_quota=False, recheck_creator=False),
}


@dataclass(frozen=True)
class Ask:
    """One turn to admit, as its source translated it."""

    source: Source
    tenant_id: str
    session_id: str
    turn_id: str
    #: the subject it is admitted as (``turns.submitted_by``)
    by: str
    agent_name: str
    agent_hash: str
    turn_input: TurnInput
    output_schema: Mapping[str, Any] | None
    budget: Mapping[str, Any] | None
    agent_version: str = ""
    on_deploy: str = "upgrade"
    project_id: str | None = None
    metadata: Mapping[str, str] | None = None
    session_metadata: Mapping[str, str] | None = None
    multitask: Multitask = Multitask.ENQUEUE
    webhook: WebhookSpec | None = None
    #: the session's own TTL, when the request names one (else its own, else the tenant's)
    expires_after: int | None = None
    #: the delivery's priority (a hint to the queue, not part of the turn)
    priority: int | None = None
    #: a rerun's first events (the outcomes it reuses): admitted by ``admit_rerun``
    copies: Sequence[Mapping[str, Any]] | None = None


class AdmitsTurn(Protocol):
    """A new turn's statement (the store's ``turns``)."""

    def admit(self, new: NewTurn, bounds: Bounds = ..., /) -> Admission: ...


class AdmitsRerun(Protocol):
    """A rerun's statement (the store's ``reruns``)."""

    def admit_rerun(
        self, new: NewTurn, copies: Sequence[Mapping[str, Any]], bounds: Bounds = ..., /
    ) -> Admission: ...


class Admits(Protocol):
    """The admission statements (``turnkeep.store.facade.Store``)."""

    @property
    def turns(self) -> AdmitsTurn: ...

    @property
    def reruns(self) -> AdmitsRerun: ...


#: ``(tenant_id, session_id)`` sent as a fair ticket (``Producer.send``/``enqueue``)
Enqueue = Callable[..., object]


@lru_cache(maxsize=8)
def _tokens(raw: str) -> TokenTable:
    return TokenTable.parse(raw)


def check_creator(settings: Settings, tenant_id: str, subject: str) -> None:
    """``CreatorRevoked`` unless a configured token stands for ``subject`` in
    ``tenant_id`` with a role that may write. A process without the token table
    (``TURNKEEP_TOKENS`` unset where the workers run) cannot tell, and admits."""
    table = _tokens(settings.auth.tokens)
    if not table.configured:
        return
    role = table.role_of(tenant_id, subject)
    if role is None or role == TenantRole.READER.value:
        raise CreatorRevoked(f"{subject!r} may no longer write in {tenant_id!r}")


def admit(
    store: Admits,
    settings: Settings,
    ask: Ask,
    *,
    timings: dict[str, float] | None = None,
) -> Admission:
    """Admit ``ask`` (blocking: one statement, or one short transaction; see
    ``Store.turns.admit`` and ``Store.reruns.admit_rerun``), bound by its source's ``RULES``. A
    refusal is the store's error, nothing written. ``timings`` (the bench's,
    api/timings.py) gets the statement's duration as ``statement``."""
    rule = RULES[ask.source]
    if rule.recheck_creator:
        check_creator(settings, ask.tenant_id, ask.by)
    bounds = Bounds(
        max_queued_session=settings.bounds.max_queued_per_session if rule.session_quota else None,
        max_queued_tenant=settings.bounds.max_queued_per_tenant if rule.tenant_quota else None,
        default_ttl=settings.erasure.session_ttl_for(ask.tenant_id),
    )

    def new_turn(input_hash: str, input: dict[str, Any]) -> NewTurn:
        return NewTurn(
            tenant_id=ask.tenant_id,
            session_id=ask.session_id,
            turn_id=ask.turn_id,
            agent_name=ask.agent_name,
            agent_hash=ask.agent_hash,
            input_hash=input_hash,
            input=input,
            output_schema=ask.output_schema,
            budget=ask.budget,
            submitted_by=ask.by,
            multitask=ask.multitask,
            webhook=ask.webhook,
            project_id=ask.project_id,
            agent_version=ask.agent_version,
            on_deploy=ask.on_deploy,
            expires_after=ask.expires_after,
            metadata=ask.metadata,
            session_metadata=ask.session_metadata,
        )

    admitted: Admission
    if ask.copies is not None:
        # a rerun's identity leaves its source's metadata out (docs/reruns.md)
        digest = recipe.identity_hash(
            ask.turn_input,
            agent_hash=ask.agent_hash,
            output_schema=ask.output_schema,
            budget=ask.budget,
        )
        rerun = new_turn(digest, ask.turn_input.to_json())
        admitted = _timed(timings, store.reruns.admit_rerun, rerun, list(ask.copies), bounds)
    else:
        admitted = recipe.admit(
            lambda digest, input: _timed(
                timings, store.turns.admit, new_turn(digest, input), bounds
            ),
            ask.turn_input,
            agent_hash=ask.agent_hash,
            output_schema=ask.output_schema,
            budget=ask.budget,
            metadata=ask.metadata,
            session_metadata=ask.session_metadata,
        )
    if ask.priority is not None:
        admitted = dataclasses.replace(admitted, priority=ask.priority)
    return admitted


def _timed(
    timings: dict[str, float] | None, statement: Callable[..., Admission], *args: Any
) -> Admission:
    """``statement(*args)``, its duration kept as ``timings["statement"]`` when asked."""
    if timings is None:
        return statement(*args)
    clock = time.perf_counter()
    try:
        return statement(*args)
    finally:
        timings["statement"] = time.perf_counter() - clock


def release(enqueue: Enqueue, admitted: Admission) -> None:
    """After the commit: send the session as a fair ticket (store/fair.py; the claim
    applies max_running), at the priority asked. Also on a replay: a duplicate ticket
    is harmless, a missing one is slow."""
    turn = admitted.turn
    if turn.state.terminal:
        return
    if admitted.priority is None:
        enqueue(turn.tenant_id, turn.session_id)
    else:
        enqueue(turn.tenant_id, turn.session_id, priority=admitted.priority)
