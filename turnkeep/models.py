"""The JSON bodies of the HTTP API as pydantic models, defined once: the one home of
the wire shapes a client and the API share (the request bodies, which only the service
reads, are api/service/requests.py and its verbs' modules).

The client (turnkeep/client/) parses answers with these; the API builds its answers
with them (api/service/wire.py) and its OpenAPI document states them closed
(api/http/bodies.py ``closed``, derived, never restated), so a field is added in one
place and every side sees it. Here every model tolerates properties it does not know,
so a client keeps working against a newer server.

Imports nothing of api/ or of the runtime: a client install needs pydantic only. The
state names are pinned against runtime.states in tests/unit/test_persisted_names.py.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, PlainSerializer

TurnState = Literal[
    "queued", "running", "waiting", "needs_reconciliation", "completed", "failed", "cancelled"
]
TERMINAL_STATES = frozenset({"completed", "failed", "cancelled"})
TERMINAL_EVENTS = frozenset({"turn.completed", "turn.failed", "turn.cancelled"})
InputKind = Literal[
    "approval",
    "question",
    "reconciliation",
    "budget_extension",
    "external_auth",
    "delegation",
    "timer",
]
#: what a version's in-flight turns do once a newer version of the agent is deployed
DeployPolicy = Literal["upgrade", "pinned"]
#: why a turn moved to another definition (``turn.definition_changed``'s ``reason``)
DefinitionChange = Literal["newer_version", "requested", "not_served"]


#: a timestamp as the API writes it, ``datetime.isoformat`` (``+00:00`` where pydantic
#: would write ``Z``): a model dumped as JSON is byte for byte what the API answers
Instant = Annotated[datetime, PlainSerializer(datetime.isoformat, when_used="json")]


def _counts(usage: dict[str, float]):  # type: ignore[no-untyped-def]
    # unannotated on purpose: pydantic documents the field's own type, not the return
    return {k: v if k == "cost_usd" else int(v) for k, v in usage.items()}


#: tokens and cost (USD) of model calls: ``input_tokens`` and ``output_tokens`` written
#: as integers, ``cost_usd`` (absent while nothing is priced) as a number
Usage = Annotated[dict[str, float], PlainSerializer(_counts, when_used="json")]


class Wire(BaseModel):
    model_config = ConfigDict(extra="allow")


class PendingInput(Wire):
    """The open input request of a parked turn: what a person needs to answer it at
    ``POST /v1/sessions/{sid}/turns/{tid}/inputs/{request_id}``."""

    request_id: str
    kind: InputKind
    step: int | None = None
    at_seq: int | None = None
    tool: dict[str, Any] | None = None
    call_id: str | None = None
    arguments: dict[str, Any] | None = None
    arguments_hash: str | None = None
    response_schema: dict[str, Any] | None = None
    response_schema_hash: str | None = None
    expires_at: Instant | None = None
    answered_by: dict[str, Any] | None = None
    detail: dict[str, Any] | None = None
    resolved: Any = None


class RerunOf(Wire):
    """Which turn a rerun re-runs and how (POST .../turns/{tid}/rerun): the steps
    before ``from_step`` are the source's outcomes, reused; ``edited`` says which
    outcome of ``from_step`` was replaced (``tool_result``, ``model_answer``), if any."""

    session_id: str
    turn_id: str
    from_step: int
    edited: Literal["tool_result", "model_answer"] | None = None
    by: str


class Held(Wire):
    """Why a runnable turn does not run: ``definition_unavailable``, no live worker
    serves ``definition_hash`` (a pinned turn whose version is not deployed)."""

    reason: str
    definition_hash: str


class Paced(Wire):
    """Why a running turn's model call waits: its provider rate limits' slot comes at
    ``until`` (``limit``: the declared limit's name; ``reason``: ``requests``,
    ``tokens`` or ``provider``). It holds no worker meanwhile (docs/flow-control.md)."""

    until: Instant
    limit: str
    reason: str
    step: int | None = None


class Turn(Wire):
    """A turn as it stands (never the tenant, the input or its hash)."""

    session_id: str
    turn_id: str
    state: TurnState
    agent: str
    attempt: int
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    accepted_seq: int
    created_at: Instant
    updated_at: Instant
    cancel_requested: bool = False
    pending_input: PendingInput | None = None
    #: every request of its wait nobody has answered yet, in call order (the approvals
    #: of one model answer are asked together; ``pending_input`` is the first of them)
    pending_inputs: list[PendingInput] = []
    #: of its model calls; a call a crash cut short is charged again when re-issued
    usage: Usage = {}
    #: the version of its agent's definition the turn runs on (it changes when the turn
    #: moves to a newer one: ``turn.definition_changed``); null for a turn admitted
    #: before versions were recorded
    agent_version: str | None = None
    #: a rerun's lineage: the turn it re-runs, from which step, what was edited
    rerun_of: RerunOf | None = None
    #: its labels, set at admission (docs/search.md)
    metadata: dict[str, str] = {}
    #: set only while the turn is runnable and no live worker serves its definition
    held: Held | None = None
    #: set only while its model call waits for a provider rate limit's slot
    paced: Paced | None = None

    @property
    def terminal(self) -> bool:
        return self.state in TERMINAL_STATES

    @property
    def awaiting_input(self) -> bool:
        """Parked on an open input request: it goes on once someone answers it."""
        return self.pending_input is not None and not self.pending_input.resolved


class Session(Wire):
    """A session's summary: ``state`` is its active turn's, ``idle`` without one."""

    session_id: str
    agent: str
    head_seq: int
    state: Literal["idle"] | TurnState
    active_turn: str | None
    created_at: Instant
    updated_at: Instant
    #: the project the session belongs to (its owner's alone); null: none
    project: str | None = None
    #: tokens and cost (USD) of every model call of the session
    usage: Usage = {}
    #: its TTL as a turn named it (null: the tenant's default), and when it is erased
    #: unless another turn comes first (null: never; docs/erasure.md)
    expires_after: int | None = None
    expires_at: Instant | None = None
    #: its labels, set by its first turn (docs/search.md)
    metadata: dict[str, str] = {}


class SessionPage(Wire):
    """``GET /v1/sessions``: the tenant's sessions, newest first; ``next`` is the
    cursor of the next page (``?after=``), null on the last."""

    sessions: list[Session]
    next: str | None


class TurnPage(Wire):
    """``GET /v1/sessions/{sid}/turns``: the session's turns, newest first; ``next`` is
    the cursor of the next page (``?after=``), null on the last."""

    turns: list[Turn]
    next: str | None


class Event(Wire):
    """One committed event of a session's journal: ``seq`` is per session, gap-free."""

    seq: int
    session_id: str
    turn_id: str | None
    type: str
    step: int | None = None
    data: dict[str, Any]
    created_at: Instant

    @property
    def terminal(self) -> bool:
        return self.type in TERMINAL_EVENTS


class StreamToken(Wire):
    """A token for ``?stream_token=`` on the session's events, and when it expires."""

    token: str
    expires_at: Instant


class Delta(Wire):
    """A live piece of a model's text (``event: model.delta``): speculative, never
    numbered, never replayed; the committed ``model.completed`` holds what counts."""

    turn_id: str | None = None
    step: int | None = None
    text: str = ""


class EventPage(Wire):
    """``GET /v1/sessions/{sid}/events`` with ``Accept: application/json``."""

    events: list[Event]
    head_seq: int
    earliest_seq: int
    #: the cursor to read the next page from (``?after=``)
    next_after: int


class Message(Wire):
    """One message of the provider-neutral transcript (``role``, ``content``, and a tool
    call's or result's fields), with the event it came from."""

    role: str
    turn_id: str
    seq: int


class MessagePage(Wire):
    """``GET /v1/sessions/{sid}/messages``: ``next`` is null on the last page."""

    messages: list[Message]
    next: int | None
    head_seq: int
    earliest_seq: int


class Attempt(Wire):
    """One worker's run of the turn: ``fence`` is the lease token it committed under;
    ``kind`` ``start``, ``resume`` (after a wait) or ``takeover`` (the run before died
    or lost its lease); ``ended_at`` its last commit (null while it runs)."""

    attempt: int
    fence: int
    seq: int
    started_at: Instant
    ended_at: Instant | None = None
    kind: Literal["start", "resume", "takeover"] = "start"


class Wait(Wire):
    """A typed input request of the turn and how it was answered."""

    request_id: str
    kind: InputKind
    step: int | None
    tool: str | None
    requested_seq: int
    requested_at: Instant
    #: null while open
    resolved_at: Instant | None
    waited_ms: int | None
    #: approved / denied / answered / expired / …: the answer's verdict, never its content
    outcome: str | None
    answered_by: str | None


class Step(Wire):
    """One model call, tool call or compaction of the turn, as committed.

    ``duration_ms`` is the call's own time where the worker recorded it, else the time
    since the turn's previous commit; ``retries`` the provider retries of a model call
    or the re-runs of a tool; ``cost`` the call's price where a price is known."""

    step: int | None
    kind: Literal["model", "tool", "compaction"]
    name: str | None
    seq: int
    attempt: int
    fence: int
    #: when it began: ``duration_ms`` before its commit (or the commit it followed);
    #: null from a server before it was recorded
    started_at: Instant | None = None
    committed_at: Instant
    duration_ms: int | None
    retries: int
    outcome: Literal["ok", "error", "interrupted"]
    usage: dict[str, int] | None
    cost: float | None
    #: ``live``: run by this turn; a rerun's ``reused`` step is its source's outcome,
    #: its ``edited`` one the outcome the rerun was asked to start from
    origin: Literal["live", "reused", "edited"] = "live"


class Timeline(Wire):
    """``GET /v1/sessions/{sid}/turns/{tid}/timeline``: a turn's steps, attempts and
    waits in journal order, without message content."""

    turn: Turn
    attempts: list[Attempt]
    steps: list[Step]
    waits: list[Wait]
    #: wall time from admission to settlement (or to now, for an active turn)
    elapsed_ms: int


class ForkedFrom(Wire):
    """Where a forked session came from: the source session and the seq it was cut at."""

    session_id: str
    seq: int


class Fork(Wire):
    """``POST /v1/sessions/{sid}/fork``: the new session. Its journal is the source's
    events up to ``forked_from.seq`` (same seqs and turn ids); ``cut_turns`` were active
    at that seq and are cancelled in the fork (error ``fork_cut``); empty on a replay."""

    session_id: str
    agent: str
    head_seq: int
    earliest_seq: int
    forked_from: ForkedFrom
    cut_turns: list[str] = []
    created_at: Instant


AttachmentState = Literal["pending", "ready", "deleting"]


class Attachment(Wire):
    """An attachment's metadata (``GET …/attachments/{aid}/content`` has its bytes). A
    turn's input may refer to it by ``attachment_id`` once it is ``ready``."""

    session_id: str
    attachment_id: str
    state: AttachmentState
    filename: str
    content_type: str
    size: int
    sha256: str
    created_at: Instant


class Project(Wire):
    """A project: the caller's own (nobody else sees it or its sessions), and what it
    changes of agents for its sessions' turns: ``overrides.agents.<name>`` may replace
    ``instructions`` and lower ``limits``. A turn pins its agent's entry at admission."""

    project_id: str
    owner: str
    overrides: dict[str, Any]
    created_at: Instant
    updated_at: Instant


class ProjectPage(Wire):
    """``GET /v1/projects``: the caller's projects, newest first; ``next`` is the cursor
    of the next page (``?after=``), null on the last."""

    projects: list[Project]
    next: str | None


# -- agents and their versions (docs/deploy.md, "Rolling deploys and agent versions") --


class VersionRef(Wire):
    """One version of an agent and the hash of its definition."""

    version: str
    definition_hash: str


class DeclaredVersion(VersionRef):
    """A version the API's agents module declares: ``latest`` for the last one
    declared of its name, ``default`` for the one the caller's tenant's new turns get
    unless they name one, and what its turns do on a deploy."""

    latest: bool
    default: bool
    on_deploy: DeployPolicy


class AgentInfo(Wire):
    """An agent the API declares: its latest version, its default for the caller's
    tenant (the latest, or for a ``gated`` agent the version the tenant last promoted,
    before any the first declared: docs/evaluation.md) and every declared version,
    oldest first (the last is the latest)."""

    name: str
    latest: VersionRef
    default: VersionRef
    gated: bool
    versions: list[DeclaredVersion]


class AgentList(Wire):
    """``GET /v1/agents``: the declared agents, by name."""

    agents: list[AgentInfo]


class LiveWorker(Wire):
    """A live worker process advertising a definition; ``seen_at``: unix seconds."""

    worker: str
    host: str
    seen_at: float


class DefinitionUse(Wire):
    """One definition hash of an agent: whether the API declares it (``version`` is
    null when not), the caller's tenant's active turns on it by state, and the live
    workers serving it. Drained: no ``turns`` left."""

    definition_hash: str
    version: str | None
    declared: bool
    latest: bool
    #: the version the caller's tenant's new turns get
    default: bool
    turns: dict[str, int] = {}
    workers: list[LiveWorker] = []

    @property
    def active(self) -> int:
        """How many of the tenant's active turns are on this definition."""
        return sum(self.turns.values())


class AgentVersions(Wire):
    """``GET /v1/agents/{name}/versions``: every definition of the agent that is
    declared, has active turns of the caller's tenant, or is served by a live worker."""

    name: str
    versions: list[DefinitionUse]


class TurnUpgrade(Wire):
    """``POST …/turns/{tid}/upgrade``: the turn moves to the newest version of its
    agent at its next safe point, pinned or not."""

    turn_id: str
    upgrade_requested: bool


class VersionUpgrade(Wire):
    """``POST /v1/agents/{name}/versions/{hash}/upgrade``: how many of the tenant's
    active turns on that definition were flagged to move."""

    requested: int


# -- chat bridges (docs/bridges.md) --


class Binding(Wire):
    """A participant binding of a chat bridge: messages from ``user`` in ``channel``
    (``*``: every channel) of ``workspace`` are admitted as ``subject`` with ``role``
    in the tenant, answered by ``agent``; a revoked one (``revoked_at``) admits
    nothing."""

    binding_id: str
    bridge: str
    workspace: str
    channel: str
    user: str
    subject: str
    role: str
    agent: str
    reply_url: str | None
    created_by: str
    created_at: Instant
    revoked_at: Instant | None


class BindingList(Wire):
    """``GET /v1/bridges/bindings``: the tenant's bindings, live ones first."""

    bindings: list[Binding]
