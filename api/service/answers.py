"""Answers to input requests (approval, question, reconciliation, budget extension,
external auth): validated against the request's bound response schema, resolved once."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import jsonschema

from api.auth import Principal
from api.errors import AnswerInvalid
from api.service.access import may_write, visible
from api.service.requests import has_nul
from api.services import Services
from runtime import inputs, plan
from runtime.hashing import sha256_hex
from runtime.obs import redact
from runtime.obs.faults import FaultPoint, hit
from runtime.states import EventType
from runtime.validation import validate
from store.errors import InputExpired, InputForbidden, InputNotOpen, NotFound
from store.records import EventRecord, TurnRecord


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
    # the journal keeps the answer redacted like every other committed value (the
    # configured secrets and patterns: runtime/obs/redact.py), and the hash of what
    # was answered, for audit
    response, digest = redact.current().redact_json(body), sha256_hex(body)
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
