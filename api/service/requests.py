"""The turn request every surface hands the service (HTTP, MCP, A2A, workflows), and
the id rules. The other request bodies live beside their one verb (api/service/forks.py,
projects.py, attachments.py); the answers' shapes are turnkeep/models.py.

Ids (tenant, session, turn) are ``[A-Za-z0-9._-]{1,128}``: they end up in Redis keys
and URLs, and ``:`` must never make two keys collide (store/keys.py).

No string of a request may hold U+0000 (NUL): Postgres stores it neither in text nor in
jsonb, so it is refused here (422) rather than by the database (500).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from turnkeep.runtime import metadata as labels
from turnkeep.runtime import webhooks
from turnkeep.runtime.hashing import canonical_json
from turnkeep.runtime.multitask import Multitask

ID_REGEX = r"^[A-Za-z0-9._-]{1,128}$"

#: a string without U+0000, which Postgres cannot store
NO_NUL = r"^[^\x00]*$"

PositiveInt = Annotated[int, Field(strict=True, gt=0)]
PositiveSeconds = Annotated[float, Field(strict=True, gt=0, allow_inf_nan=False)]
#: an attachment a turn's input names (api/service/attachments.py), and how many it may name
AttachmentId = Annotated[str, Field(pattern=ID_REGEX)]
MAX_ATTACHMENTS = 16
#: labels of a session or a turn (runtime/metadata.py has the bounds; docs/search.md)
Metadata = Annotated[
    dict[
        Annotated[str, Field(pattern=labels.KEY_PATTERN)],
        Annotated[str, Field(max_length=labels.MAX_VALUE, pattern=NO_NUL)],
    ],
    Field(max_length=labels.MAX_LABELS, json_schema_extra={"additionalProperties": False}),
]


class InputMessage(BaseModel):
    """One message of a turn's input."""

    model_config = ConfigDict(extra="forbid")

    role: Literal["user", "system"]
    content: str = Field(pattern=NO_NUL)


class Budget(BaseModel):
    """Per-turn bounds; each may only lower the agent's limits. All optional."""

    model_config = ConfigDict(extra="forbid")

    max_iterations: PositiveInt | None = None
    max_model_calls: PositiveInt | None = None
    max_tool_calls: PositiveInt | None = None
    max_tokens: PositiveInt | None = None
    max_seconds: PositiveSeconds | None = None
    #: USD the turn's model calls may cost (a re-issued call charged again)
    max_cost_usd: Annotated[float, Field(gt=0, le=1_000_000)] | None = None

    def to_json(self) -> dict[str, Any] | None:
        """The hashed and stored form: unset fields dropped; nothing set is no budget."""
        data = self.model_dump(exclude_none=True)
        return data or None


#: the longest session TTL a turn may name: ten years, in seconds
MAX_TTL = 315_360_000


class TurnRequest(BaseModel):
    """``POST /v1/sessions/{sid}/turns``."""

    model_config = ConfigDict(extra="forbid")

    agent: str = Field(min_length=1, max_length=128)
    #: a version the agents module declares of ``agent``; None: its latest. Part of the
    #: turn's identity through the definition's hash (a replay naming none is matched
    #: against the definition the turn was admitted with: admission.py)
    agent_version: str | None = Field(default=None, min_length=1, max_length=128)
    input: list[InputMessage] = Field(min_length=1, max_length=100)
    output_schema: dict[str, Any] | None = None
    budget: Budget | None = None
    #: what to do when the session has an active turn (runtime/multitask.py). Not
    #: part of the turn's identity: a replay answers the stored turn whatever it says
    multitask: Multitask = Multitask.ENQUEUE
    #: 0 (last) to 9 (first): how soon a worker takes the session, against the
    #: tenant's own other sessions waiting (tenants take turns whatever their
    #: priorities: store/fair.py); None: 5. Not
    #: part of the turn's identity, and a hint of the delivery only: a recovery
    #: scan's re-delivery is at the default
    priority: int | None = Field(default=None, ge=0, le=9)
    #: the session's TTL in seconds (docs/erasure.md): it is erased this long after its
    #: newest turn was admitted; kept for its later turns that name none (else the
    #: tenant's default). Not part of the turn's identity: a replay changes nothing
    expires_after: int | None = Field(default=None, ge=1, le=MAX_TTL)
    #: an http(s) URL the turn's outcome is POSTed to, signed, once it settles (at least
    #: once, from the outbox: README "Workflow nodes"); needs TURNKEEP_WEBHOOK_SECRET.
    #: A replay naming another one is a conflict
    callback_url: str | None = Field(
        default=None,
        description="an http(s) URL for the completion webhook (needs TURNKEEP_WEBHOOK_SECRET)",
        json_schema_extra={"pattern": r"^https?://\S+$", "maxLength": webhooks.MAX_URL},
    )

    @field_validator("callback_url")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        return None if value is None else webhooks.check_url(value)

    #: the turn's labels, searched by (docs/search.md); part of its identity: a replay
    #: naming others is a conflict
    metadata: Metadata | None = None
    #: the session's labels, set by the turn that creates it; a later turn naming them
    #: must name the same (409 session_metadata_conflict). Part of the turn's identity
    session_metadata: Metadata | None = None

    #: ids of ready attachments of the session (api/service/attachments.py); part of the input
    attachments: list[AttachmentId] | None = Field(default=None, max_length=MAX_ATTACHMENTS)
    #: the caller's project the session belongs to (api/service/projects.py): set by the
    #: session's first turn, named by every later one; its override of the agent is
    #: pinned in the input and part of its hash
    project: str | None = Field(default=None, pattern=ID_REGEX)

    @field_validator("attachments")
    @classmethod
    def _distinct(cls, value: list[str] | None) -> list[str] | None:
        if value is not None and len(set(value)) != len(value):
            raise ValueError("must not name an attachment twice")
        return value

    @field_validator("output_schema")
    @classmethod
    def _finite_json(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        # that it is a JSON Schema within the size and depth bounds is checked on the
        # admission (api/service/bounds.py), off the event loop and against the settings
        if value is None:
            return None
        try:
            canonical_json(value)
        except ValueError:
            raise ValueError("must be finite JSON (no NaN or Infinity)") from None
        if has_nul(value):
            raise ValueError("must not contain U+0000 (NUL)")
        return value

    def messages(self) -> list[dict[str, Any]]:
        return [m.model_dump() for m in self.input]

    def budget_json(self) -> dict[str, Any] | None:
        return None if self.budget is None else self.budget.to_json()

    def labels(self) -> tuple[dict[str, str] | None, dict[str, str] | None]:
        """The turn's and the session's metadata; None for none (an empty object is
        none, and hashes as none)."""
        return self.metadata or None, self.session_metadata or None


def has_nul(value: Any) -> bool:
    """Whether a JSON value holds U+0000 in a string or a key (Postgres stores neither).
    Iterative: a deep value costs no recursion."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if "\x00" in item:
                return True
        elif isinstance(item, dict):
            stack.extend(item)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False
