"""Frozen records the store hands out. Rows never leave the store as cursors."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from turnkeep.runtime.messages import Message
from turnkeep.runtime.pending import TurnWait
from turnkeep.runtime.states import PARKED_STATES, RUNNABLE_STATES, TurnState

# an attachment's record lives with its states, in store/attachments.py
from turnkeep.store.attachments import AttachmentRecord as AttachmentRecord


@dataclass(frozen=True)
class SessionRecord:
    tenant_id: str
    session_id: str
    agent_name: str
    fence: int
    head_seq: int
    created_at: datetime
    updated_at: datetime
    #: the oldest retained event (the journal prune moves it); 1 when nothing was pruned
    earliest_seq: int = 1
    #: tokens and cost of the session's model calls (``input_tokens``, ``output_tokens``,
    #: ``cost_usd``)
    usage: dict[str, Any] = field(default_factory=dict)
    #: the project the session belongs to (set by its first turn, never changed); None
    project_id: str | None = None
    #: its TTL as a turn named it (None: the tenant's default), and when it goes
    #: unless a turn comes first (None: never); docs/erasure.md
    expires_after: int | None = None
    expires_at: datetime | None = None
    #: set once it was deleted (its erasure under way)
    deleted_at: datetime | None = None
    #: its labels (runtime/metadata.py), set by its first turn; {} for none
    metadata: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class SessionAccess:
    """What the API checks before anything of a session (api/service/access.py)."""

    #: its project (None: none) and that project's owner, who alone sees it
    project_id: str | None
    owner: str | None
    #: when it was deleted or expired (docs/erasure.md); None while it lives
    gone_at: datetime | None = None
    #: when its erasure finished; None while it runs (or it lives)
    erased_at: datetime | None = None


@dataclass(frozen=True)
class SessionListing:
    """A session as a listing shows it: the record and its lane head, if any."""

    session: SessionRecord
    active_turn: str | None
    active_state: TurnState | None


@dataclass(frozen=True)
class TurnRecord:
    tenant_id: str
    session_id: str
    turn_id: str
    ordinal: int
    state: TurnState
    agent_name: str
    agent_hash: str
    input_hash: str
    input: dict[str, Any]
    output_schema: dict[str, Any] | None
    budget: dict[str, Any] | None
    attempt: int
    revision: int
    cancel_requested: bool
    #: the request it waits on, read once from the row (runtime/pending.py)
    pending_input: TurnWait | None
    result: dict[str, Any] | None
    error: dict[str, Any] | None
    accepted_seq: int
    submitted_by: str
    created_at: datetime
    updated_at: datetime
    #: tokens and cost of the turn's model calls (``input_tokens``, ``output_tokens``,
    #: ``cost_usd``; a call a crash cut short is charged again when it is re-issued)
    usage: dict[str, Any] = field(default_factory=dict)
    #: the version of the turn's definition ("": admitted before versions were kept)
    agent_version: str = ""
    #: what the turn does once a newer version of its agent is deployed
    #: (runtime.agents.DeployPolicy's value), pinned at admission
    on_deploy: str = "upgrade"
    #: an operator asked for the turn to move to its agent's newest version
    upgrade_requested: bool = False
    #: its labels (runtime/metadata.py), set at admission; {} for none
    metadata: dict[str, str] = field(default_factory=dict)
    #: its session's project, copied at admission (None: none)
    project_id: str | None = None

    @property
    def awaiting_input(self) -> bool:
        """Whether it is parked on an open input request: someone must answer it."""
        pending = self.pending_input
        return self.state in PARKED_STATES and pending is not None and not pending.resolved

    @property
    def runnable(self) -> bool:
        """Whether a worker can step it now: queued, running, or parked on an input
        request that has been answered (or has expired and been settled)."""
        if self.state in RUNNABLE_STATES:
            return True
        pending = self.pending_input
        return self.state in PARKED_STATES and pending is not None and pending.resolved


@dataclass(frozen=True)
class EventRecord:
    tenant_id: str
    session_id: str
    seq: int
    turn_id: str
    type: str
    step: int | None
    fence: int
    data: dict[str, Any]
    created_at: datetime

    def to_json(self) -> dict[str, Any]:
        """The public form, as SSE and the JSON page send it (no tenant)."""
        return {
            "seq": self.seq,
            "session_id": self.session_id,
            "turn_id": self.turn_id,
            "type": self.type,
            "step": self.step,
            "data": self.data,
            "created_at": self.created_at.isoformat(),
        }


@dataclass(frozen=True)
class EventPageRecord:
    """A page of the journal read in one snapshot, with the session's head seq and its
    earliest retained seq beside it."""

    events: list[EventRecord]
    head_seq: int
    earliest_seq: int


@dataclass(frozen=True)
class Pruned:
    """What one prune statement did to a session's journal: events deleted, its
    earliest retained and head seq afterwards, and the tool steps it deleted."""

    deleted: int
    earliest_seq: int
    head_seq: int
    #: recorded tool steps (tool_steps) of long-ended turns deleted with them
    steps_deleted: int = 0


@dataclass(frozen=True)
class Admission:
    """What admission answered: the stored turn, whether this request created it, and
    the ``turn.accepted`` event it wrote (None on a replay). ``interrupted``: the
    cancellation events an admission with ``multitask=interrupt`` wrote for the turns
    before it, in seq order (empty on a replay)."""

    turn: TurnRecord
    created: bool
    event: EventRecord | None = None
    interrupted: tuple[EventRecord, ...] = ()
    #: the priority the request asked its delivery to have (not the turn's: a hint)
    priority: int | None = None


@dataclass(frozen=True)
class Appended:
    """What a fenced append returned: its events (the step's, then the terminal one
    when the step settled the turn) and the turn's new revision."""

    revision: int
    attempt: int
    cancel_requested: bool
    events: tuple[EventRecord, ...]
    #: set by a settling append: whether the lane's next turn can run now
    lane_runnable: bool = False
    #: set by a settling append: the turn has a webhook not delivered yet
    webhook: bool = False

    @property
    def event(self) -> EventRecord:
        """The last event written."""
        return self.events[-1]

    @property
    def seq(self) -> int:
        return self.events[-1].seq


@dataclass(frozen=True)
class LaneStarted:
    """What a task's first statement found and did.

    ``claimed``: the fence was accepted (else ``stored_fence`` is the one Postgres
    holds). ``head``: the lane's oldest active turn as it was before, or None.
    ``turn``: that turn after its attempt started (running), or None when it was not
    started (not runnable, an agent this worker does not serve, or at the attempt
    cap). ``prior``: inputs and outcomes of the session's earlier turns; ``events``:
    every event of the started turn, its new ``turn.started`` last; ``decoded``:
    ``prior``'s messages by seq (runtime/plan.py ``decode``), kept with the window in
    the worker's cache (store/context_cache.py), for ``plan.transcript``.
    """

    claimed: bool
    stored_fence: int
    head: TurnRecord | None
    turn: TurnRecord | None = None
    prior: tuple[EventRecord, ...] = ()
    events: tuple[EventRecord, ...] = ()
    decoded: Mapping[int, tuple[Message, ...]] | None = None


@dataclass(frozen=True)
class WebhookRecord:
    """A workflow node's webhook in the outbox (store/schema.py ``webhooks``)."""

    tenant_id: str
    session_id: str
    turn_id: str
    run_id: str
    node_id: str
    url: str
    secret_id: str
    delivery_id: str
    #: attempts started (claims)
    attempts: int
    next_attempt_at: datetime
    claim: str | None
    last_status: int | None
    last_error: str | None
    delivered_at: datetime | None
    created_at: datetime
    updated_at: datetime
    #: a chat bridge's reply: the connector that posts it (``slack``) and where (its
    #: thread); None: the signed turnkeep webhook
    connector: str | None = None
    target: dict[str, Any] | None = None
    #: the last input request asked about in the thread (a bridge's approval prompt)
    prompted: str | None = None

    @property
    def delivered(self) -> bool:
        return self.delivered_at is not None


@dataclass(frozen=True)
class WebhookSpec:
    """What admission writes for a node's webhook, beside its turn."""

    run_id: str
    node_id: str
    url: str
    secret_id: str
    delivery_id: str
    #: a chat bridge's reply (``WebhookRecord.connector``, ``target``)
    connector: str | None = None
    target: dict[str, Any] | None = None


@dataclass(frozen=True)
class DuePrompt:
    """A chat bridge's turn parked on an open input request nobody was asked about in
    its thread yet: the reply's row (where) and the request (what)."""

    webhook: WebhookRecord
    request: TurnWait


@dataclass(frozen=True)
class Claimed:
    """A webhook a deliverer claimed (its token is ``webhook.claim``), with the outcome
    of its settled turn: what one attempt sends."""

    webhook: WebhookRecord
    state: TurnState
    result: dict[str, Any] | None
    error: dict[str, Any] | None


@dataclass(frozen=True)
class ToolStepRecord:
    """A recorded step of a tool call (store/schema.py ``tool_steps``)."""

    tenant_id: str
    session_id: str
    turn_id: str
    #: the tool call's step in the turn
    step: int
    name: str
    #: what the step's function returned, as JSON holds it
    result: Any
    created_at: datetime


@dataclass(frozen=True)
class Forked:
    """What a fork answered: the new session, where it came from, and whether this
    request created it (False: a replay). ``cut``: the turns active at ``at_seq``,
    whose copies are cancelled (``fork_cut``); empty on a replay."""

    session: SessionRecord
    source_id: str
    at_seq: int
    created: bool
    cut: tuple[str, ...] = ()


@dataclass(frozen=True)
class ProjectRecord:
    """A project (store/schema.py ``projects``): who owns it and its overrides."""

    tenant_id: str
    project_id: str
    #: the subject that created it: the only one who sees it and its sessions
    owner: str
    #: {"agents": {<agent name>: {"instructions": ..., "limits": {...}}}}
    overrides: dict[str, Any]
    #: the hash of the creating request's overrides (a replay of it is answered)
    request_hash: str
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True)
class MemoryRecord:
    """A remembered fact (store/schema.py ``memories``; runtime/memory.py)."""

    tenant_id: str
    #: ``subject:<submitted_by>`` or ``project:<project id>``
    scope_key: str
    #: the idempotency key of the tool call that wrote it
    source_key: str
    fact: str
    #: where it was remembered
    session_id: str
    turn_id: str
    created_at: datetime


@dataclass(frozen=True)
class TombstoneRecord:
    """What stays of an erased session (docs/erasure.md): who deleted it and when, and
    when its erasure finished (None while it runs)."""

    tenant_id: str
    session_id: str
    project_id: str | None
    #: ``deleted`` (DELETE) or ``expired`` (its TTL)
    reason: str
    #: the subject whose token deleted it; None when it expired
    deleted_by: str | None
    deleted_at: datetime
    #: rows erased so far (the session row included once done)
    erased_rows: int
    updated_at: datetime
    erased_at: datetime | None

    @property
    def erased(self) -> bool:
        return self.erased_at is not None


@dataclass(frozen=True)
class Tombstoned:
    """What a DELETE (or the TTL's expiry) did: the tombstone, whether this call wrote
    it (False: it was there already), and the active turns it cancelled."""

    tombstone: TombstoneRecord
    created: bool
    cancelled: int = 0
