"""Answers to input requests (approval, question, reconciliation, budget extension,
external auth): validated against the request's bound response schema, resolved once."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Annotated, Any

import jsonschema
from pydantic import BaseModel, ConfigDict, Field

from turnkeep.api.auth import Principal
from turnkeep.api.errors import AnswerInvalid
from turnkeep.api.resources import ApiResources
from turnkeep.api.service.access import may_write, visible
from turnkeep.api.service.requests import ID_REGEX, has_nul
from turnkeep.runtime import input_groups, inputs, plan
from turnkeep.runtime.hashing import sha256_hex
from turnkeep.runtime.obs import redact
from turnkeep.runtime.obs.faults import FaultPoint, hit
from turnkeep.runtime.pending import AskedInput
from turnkeep.runtime.states import EventType
from turnkeep.runtime.validation import validate
from turnkeep.store.errors import InputExpired, InputForbidden, InputNotOpen, NotFound, Unavailable
from turnkeep.store.records import EventRecord, TurnRecord

log = logging.getLogger(__name__)


def open_request(
    services: ApiResources, principal: Principal, session_id: str, tid: str, rid: str
) -> tuple[TurnRecord, AskedInput]:
    """The turn and its open request ``rid`` (alone, or one of a group asked together:
    runtime/input_groups.py), or the typed refusal: ``NotFound`` for a request this
    tenant never saw, ``InputExpired``, ``InputNotOpen`` once answered."""
    turn = services.store.reads.get_turn(principal.tenant, session_id, tid)
    pending = None if turn.pending_input is None else turn.pending_input.member(rid)
    if pending is not None:
        if pending.expired_unanswered:
            raise InputExpired("the input request expired unanswered")
        if pending.resolved:
            raise InputNotOpen("the input request was already answered")
        if pending.expired():
            raise InputExpired("the input request expired unanswered")
        return turn, pending
    events = services.store.reads.turn_events(principal.tenant, session_id, tid)
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
    services: ApiResources,
    principal: Principal,
    session_id: str,
    tid: str,
    rid: str,
    body: dict[str, Any],
) -> Answered:
    """Answer an open request once, as its bound response schema says."""
    done = answer_many(services, principal, session_id, tid, [(rid, body)])
    return Answered(done.turn, done.events[0])


class OneAnswer(BaseModel):
    """An answer to one request of the turn's wait."""

    model_config = ConfigDict(extra="forbid")

    request_id: str = Field(pattern=ID_REGEX)
    #: as the request's bound response schema says
    response: dict[str, Any]


class AnswersRequest(BaseModel):
    """``POST /v1/sessions/{sid}/turns/{tid}/inputs``: several answers at once."""

    model_config = ConfigDict(extra="forbid")

    answers: Annotated[list[OneAnswer], Field(min_length=1, max_length=64)]


@dataclass(frozen=True)
class AnsweredMany:
    turn: TurnRecord
    events: tuple[EventRecord, ...]

    @property
    def event(self) -> EventRecord:
        return self.events[-1]


def answer_many(
    services: ApiResources,
    principal: Principal,
    session_id: str,
    tid: str,
    answers: list[tuple[str, dict[str, Any]]],
) -> AnsweredMany:
    """Answer open requests of the turn's wait, all or none: each checked (open, this
    principal's to answer, valid for its schema) before any is recorded; several are
    recorded in one statement (they must be of one group asked together)."""
    may_write(principal)
    visible(services, principal, session_id, missing="turn not found")
    if len({rid for rid, _ in answers}) != len(answers):
        raise AnswerInvalid("body.answers", "names a request more than once")
    checked = [
        _checked(services, principal, session_id, tid, rid, body, i, len(answers) > 1)
        for i, (rid, body) in enumerate(answers)
    ]
    hit(FaultPoint.BEFORE_ANSWER)
    if len(checked) == 1:
        rid, response, digest, _ = checked[0]
        events: tuple[EventRecord, ...] = (
            services.store.turns.resolve_input(
                principal.tenant,
                session_id,
                tid,
                rid,
                response=response,
                response_hash=digest,
                subject=principal.subject,
            ),
        )
    else:
        events = tuple(
            services.store.waits.resolve_inputs(
                principal.tenant,
                session_id,
                tid,
                [
                    input_groups.GroupAnswer(rid, response, digest)
                    for rid, response, digest, _ in checked
                ],
                subject=principal.subject,
            )
        )
    hit(FaultPoint.AFTER_ANSWER)
    secrets = [secret for *_, secret in checked if secret is not None]
    _hand_over(services, principal.tenant, session_id, tid, secrets)
    return AnsweredMany(services.store.reads.get_turn(principal.tenant, session_id, tid), events)


def _checked(
    services: ApiResources,
    principal: Principal,
    session_id: str,
    tid: str,
    rid: str,
    body: dict[str, Any],
    index: int,
    many: bool,
) -> tuple[str, dict[str, Any], str, Secret | None]:
    """(request id, what the journal keeps of the answer, the answer's hash, and the
    credential to hand to the tool once the answer is recorded)."""
    where = f"body.answers.{index}.response" if many else "body"
    turn, pending = open_request(services, principal, session_id, tid, rid)
    bound = pending.answered_by or {"subject": turn.submitted_by}
    if not inputs.may_answer(bound, subject=principal.subject, role=principal.role):
        raise InputForbidden("this principal may not answer the request")
    try:
        validate(body, pending.response_schema)
    except jsonschema.ValidationError as exc:
        path = ".".join(str(p) for p in exc.absolute_path)
        raise AnswerInvalid(where + "." + path if path else where, exc.message) from None
    if has_nul(body):
        raise AnswerInvalid(where, "must not contain U+0000 (NUL)")
    # the journal keeps the answer redacted like every other committed value (the
    # configured secrets and patterns: runtime/obs/redact.py), and the hash of what
    # was answered, for audit
    response, digest = redact.current().redact_json(body), sha256_hex(body)
    secret = None
    if inputs.secret(pending.kind):
        # credentials wait in Redis for the tool; Postgres keeps only their hash
        expires = datetime.fromisoformat(str(pending.expires_at))
        secret = Secret(rid, body, (expires - datetime.now(UTC)).total_seconds())
        response = {"secret": True}
    return rid, response, digest, secret


@dataclass(frozen=True)
class Secret:
    """A credential answered, for the tool that asked (store/secrets.py)."""

    request_id: str
    value: dict[str, Any]
    ttl: float


def _hand_over(
    services: ApiResources, tenant: str, session_id: str, tid: str, secrets: list[Secret]
) -> None:
    """Put the recorded answers' credentials where the tool reads them: only once the
    answer won (a racer refused at the record never overwrites the winner's), before
    the session is enqueued. Then the tombstone is asked: a DELETE that committed
    meanwhile may have erased the session's keys before this put (worker/erasure.py
    deletes them after the tombstone), so the credential is taken back; one that
    commits after this read is followed by an erasure that finds it."""
    try:
        for s in secrets:
            services.secrets.put(tenant, session_id, tid, s.request_id, s.value, ttl=s.ttl)
    except Unavailable:
        # recorded all the same: the tool finds no credential and asks again, as after
        # Redis lost one (store/secrets.py)
        log.warning("a credential was not handed over: redis is unavailable")
    if secrets and services.store.reads.gone(tenant, session_id) is not None:
        for s in secrets:
            services.secrets.discard(tenant, session_id, tid, s.request_id)


def after_answer(services: ApiResources, done: Answered | AnsweredMany) -> None:
    events = done.events if isinstance(done, AnsweredMany) else (done.event,)
    services.publisher.committed(*events)
    services.producer.enqueue(done.event.tenant_id, done.event.session_id)
