"""Input requests: one typed protocol for every wait a person (or program) answers.

A turn that cannot go on without someone's answer commits an ``input.requested``
event and parks (``waiting``, or ``needs_reconciliation`` for a reconciliation).
The request is bound exactly: tenant, session, turn, the journal seq it was asked
at, the tool (name, version, parameter-schema hash) and the hash of the arguments,
the response schema and its hash, an expiry, and who may answer. The API validates
an answer against the bound schema and resolves the request once
(``input.resolved``, with who answered and the hash of the response).

Kinds and persisted names are pinned in tests/unit/test_persisted_names.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Any

from turnkeep.runtime.hashing import sha256_hex
from turnkeep.runtime.signals import Signal
from turnkeep.runtime.tokens import TenantRole


class InputKind(StrEnum):
    """What a request asks for."""

    #: may this tool call run with these arguments? (answer: approved, reason)
    APPROVAL = "approval"
    #: an input tool's question (answer: the tool's answer schema)
    QUESTION = "question"
    #: an effectful call's outcome is unknown after a crash or timeout: what happened?
    RECONCILIATION = "reconciliation"
    #: the turn reached a bound of its budget: may it have more?
    BUDGET_EXTENSION = "budget_extension"
    #: a tool needs credentials it does not hold (handed to the tool, never journalled)
    EXTERNAL_AUTH = "external_auth"
    #: the turn delegated tasks to child turns: answered by the runtime, never a person,
    #: once every child has ended (runtime/delegation.py)
    DELEGATION = "delegation"
    #: a tool call sleeps until a time: answered by the runtime, never a person, once
    #: the time has come (runtime/timers.py)
    TIMER = "timer"


_RANK = {TenantRole.READER: 0, TenantRole.MEMBER: 1, TenantRole.ADMIN: 2}

#: ``answered_by`` of a definition: the subject that admitted the turn
STARTER = "starter"


class ReconcileOutcome(StrEnum):
    """What a reconciliation answer says happened to the call."""

    #: the effect happened: ``result`` becomes the tool's result
    SUCCEEDED = "succeeded"
    #: it failed: ``error`` becomes the tool's error result
    FAILED = "failed"
    #: it never ran: the runtime runs it now, once
    NOT_EXECUTED = "not_executed"


APPROVAL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"approved": {"type": "boolean"}, "reason": {"type": "string"}},
    "required": ["approved"],
    "additionalProperties": False,
}

RECONCILIATION_SCHEMA: dict[str, Any] = {
    "oneOf": [
        {
            "type": "object",
            "properties": {"outcome": {"const": "succeeded"}, "result": {}},
            "required": ["outcome", "result"],
            "additionalProperties": False,
        },
        {
            "type": "object",
            "properties": {"outcome": {"const": "failed"}, "error": {"type": "string"}},
            "required": ["outcome", "error"],
            "additionalProperties": False,
        },
        {
            "type": "object",
            "properties": {"outcome": {"const": "not_executed"}},
            "required": ["outcome"],
            "additionalProperties": False,
        },
    ]
}

_MORE = {"type": "integer", "minimum": 1}
BUDGET_EXTENSION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "approved": {"type": "boolean"},
        "reason": {"type": "string"},
        # how much each bound grows by; an approval without it doubles the bound reached
        "extend": {
            "type": "object",
            "properties": {
                "max_iterations": _MORE,
                "max_model_calls": _MORE,
                "max_tool_calls": _MORE,
                "max_tokens": _MORE,
                "max_seconds": {"type": "number", "exclusiveMinimum": 0},
            },
            "additionalProperties": False,
        },
    },
    "required": ["approved"],
    "additionalProperties": False,
}

DEFAULT_AUTH_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"token": {"type": "string", "minLength": 1}},
    "required": ["token"],
    "additionalProperties": False,
}


def question_schema(asks: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"answer": dict(asks)},
        "required": ["answer"],
        "additionalProperties": False,
    }


class ExternalAuthRequired(Signal):
    """Raised by a tool that needs credentials it does not hold: a signal, not an error.

    The turn waits on an ``external_auth`` request; the answer (validated against
    ``schema``) is handed to the tool's next run as ``ctx.auth`` and never journalled
    in the clear: the journal keeps its hash.
    """

    def __init__(
        self,
        provider: str,
        *,
        scopes: tuple[str, ...] = (),
        message: str = "",
        schema: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(message or f"credentials for {provider} are needed")
        self.provider = provider
        self.scopes = tuple(scopes)
        self.message = message or f"credentials for {provider} are needed"
        self.schema = dict(schema or DEFAULT_AUTH_SCHEMA)


def request_id(kind: InputKind, step: int, nth: int) -> str:
    """Stable across crashes: a step that asks again before its request was committed
    asks with the same id; a later request of the same kind for the step is ``nth`` + 1."""
    return f"{kind.value}-{step}-{nth}"


#: ``answered_by`` of a request only the runtime answers (a delegation)
RUNTIME = "runtime"


def answerers(answered_by: str, submitted_by: str) -> dict[str, str]:
    """Who may answer: the subject that started the turn, a role, or the runtime."""
    if answered_by == STARTER:
        return {"subject": submitted_by}
    if answered_by == RUNTIME:
        return {"runtime": RUNTIME}
    return {"role": TenantRole(answered_by).value}


def may_answer(bound: Mapping[str, Any], *, subject: str, role: str) -> bool:
    """Whether a principal may answer a request bound to ``bound`` (its ``answerers``).
    A reader never answers; a role-bound request takes that role or a higher one."""
    if TenantRole(role) is TenantRole.READER or "runtime" in bound:
        return False
    if "subject" in bound:
        return bool(subject == bound["subject"])
    return _RANK[TenantRole(role)] >= _RANK[TenantRole(bound["role"])]


def build(
    kind: InputKind,
    *,
    tenant_id: str,
    session_id: str,
    turn_id: str,
    step: int,
    nth: int,
    at_seq: int,
    response_schema: Mapping[str, Any],
    expires_in: float,
    answered_by: Mapping[str, str],
    tool: Mapping[str, Any] | None = None,
    call_id: str | None = None,
    arguments: Mapping[str, Any] | None = None,
    detail: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The request as journalled on ``input.requested`` and kept on the turn."""
    schema = dict(response_schema)
    return {
        "request_id": request_id(kind, step, nth),
        "kind": kind.value,
        "tenant_id": tenant_id,
        "session_id": session_id,
        "turn_id": turn_id,
        "step": step,
        "at_seq": at_seq,
        "tool": None if tool is None else dict(tool),
        "call_id": call_id,
        "arguments": None if arguments is None else dict(arguments),
        "arguments_hash": None if arguments is None else sha256_hex(dict(arguments)),
        "response_schema": schema,
        "response_schema_hash": sha256_hex(schema),
        "expires_at": (datetime.now(UTC) + timedelta(seconds=expires_in)).isoformat(),
        "answered_by": dict(answered_by),
        "detail": dict(detail or {}),
    }


def secret(kind: str) -> bool:
    """Whether an answer of this kind is a secret: kept out of the journal, the turn
    row and every log; only its hash is recorded."""
    return kind == InputKind.EXTERNAL_AUTH.value
