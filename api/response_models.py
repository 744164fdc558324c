"""The JSON bodies the API answers, as models for the OpenAPI document only.

The routes build their bodies as dicts (api/views.py, the routes' own helpers) and
return them as they are: these models are never used to validate or serialize a
response, only to say what one holds. Top-level bodies forbid other properties, so a
field added to a view without its model shows up in tests/integration/test_openapi.py.
Free-form parts (a turn's result and error, an event's data) stay open objects.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from runtime.states import TurnState


class _Closed(BaseModel):
    model_config = ConfigDict(extra="forbid")


class PendingInput(BaseModel):
    """The open input request of a parked turn: what a person needs to answer it at
    ``POST /v1/sessions/{sid}/turns/{tid}/inputs/{request_id}``."""

    request_id: str
    kind: Literal["approval", "question", "reconciliation", "budget_extension", "external_auth"]
    step: int | None = None
    at_seq: int | None = None
    tool: dict[str, Any] | None = None
    call_id: str | None = None
    arguments: dict[str, Any] | None = None
    arguments_hash: str | None = None
    response_schema: dict[str, Any] | None = None
    response_schema_hash: str | None = None
    expires_at: datetime | None = None
    answered_by: dict[str, Any] | None = None
    detail: dict[str, Any] | None = None
    resolved: Any = None


class Turn(_Closed):
    """A turn as it stands (never the tenant, the input or its hash)."""

    session_id: str
    turn_id: str
    state: TurnState
    agent: str
    attempt: int
    result: dict[str, Any] | None
    error: dict[str, Any] | None
    accepted_seq: int
    created_at: datetime
    updated_at: datetime
    cancel_requested: bool
    pending_input: PendingInput | None


class Session(_Closed):
    """A session's summary: ``state`` is its active turn's, ``idle`` without one."""

    session_id: str
    agent: str
    head_seq: int
    state: Literal["idle"] | TurnState
    active_turn: str | None
    created_at: datetime
    updated_at: datetime


class Event(_Closed):
    """One committed event of a session's journal."""

    seq: int
    session_id: str
    turn_id: str | None
    type: str
    step: int | None
    data: dict[str, Any]
    created_at: datetime


class EventPage(_Closed):
    """``GET /v1/sessions/{sid}/events`` with ``Accept: application/json``."""

    events: list[Event]
    head_seq: int
    earliest_seq: int
    #: the cursor to read the next page from (``?after=``)
    next_after: int


class Message(BaseModel):
    """One message of the provider-neutral transcript (``role``, ``content``, and a tool
    call's or result's fields), with the event it came from."""

    role: str
    turn_id: str
    seq: int


class MessagePage(_Closed):
    """``GET /v1/sessions/{sid}/messages``: ``next`` is null on the last page."""

    messages: list[Message]
    next: int | None
    head_seq: int
    earliest_seq: int


class Webhook(_Closed):
    """The completion webhook of a workflow node and its delivery."""

    url: str
    delivery_id: str
    status: Literal["pending", "delivered"]
    attempts: int
    delivered_at: datetime | None
    next_attempt_at: datetime | None
    last_status: int | None
    last_error: str | None


class Node(_Closed):
    """A workflow node as its turn stands."""

    run_id: str
    node_id: str
    session_id: str
    turn_id: str
    state: Literal["running", "waiting", "done"]
    turn_state: TurnState
    pending_input: PendingInput | None
    result: dict[str, Any] | None
    error: dict[str, Any] | None
    agent: str
    created_at: datetime
    updated_at: datetime
    webhook: Webhook | None


class StreamToken(_Closed):
    """A token for ``?stream_token=`` on the session's events, and when it expires."""

    token: str
    expires_at: datetime


class Health(_Closed):
    status: Literal["ok"]


class Checks(_Closed):
    postgres: Literal["ok", "failed"]
    redis: Literal["ok", "failed"]


class Ready(_Closed):
    status: Literal["ready"]
    checks: Checks


class Problem(BaseModel):
    """An RFC 9457 problem (``application/problem+json``): every error the API answers.
    ``code`` is stable; some codes add fields (listed, all optional). The body never
    carries tenant data, ids, tokens or request input."""

    type: str = Field(pattern=r"^urn:turnkeep:problem:[a-z_]+$")
    title: str
    status: int
    code: str = Field(pattern=r"^[a-z_]+$")
    detail: str
    #: validation_error: where and what, never the input
    errors: list[dict[str, Any]] | None = None
    #: cursor_ahead
    cursor: int | None = None
    head_seq: int | None = None
    #: resync_required
    requested: int | None = None
    earliest: int | None = None
    latest: int | None = None
    #: quota_exceeded: the quota's scope and bound
    quota: str | None = None
    limit: int | None = None
    #: a failed readiness check
    checks: Checks | None = None
