"""What the executor needs of the world: of the store, the few parts it calls, each
a Protocol of the methods it uses (the real ``Store`` satisfies them: mypy checks it
where ``WorkerResources`` is a ``Resources``; the unit tests run the real one over the
in-memory connector); the lease manager, publisher and heartbeat are Protocols their
real classes and the unit tests' fakes satisfy."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, Protocol

from turnkeep.runtime.agents.registry import AgentRegistry
from turnkeep.runtime.obs.redact import Redactor
from turnkeep.runtime.settings import Settings
from turnkeep.store.delegation import JoinAnswers
from turnkeep.store.lease import Lease, Released
from turnkeep.store.new_turn import Bounds, NewTurn
from turnkeep.store.pacer import Bucket, Mark, Reservation
from turnkeep.store.records import (
    Admission,
    Appended,
    EventRecord,
    LaneStarted,
    MemoryRecord,
    TombstoneRecord,
    TurnRecord,
)
from turnkeep.store.step_commit import StepCommit


class StepReads(Protocol):
    """The executor's reads (``store.reads``)."""

    def get_turn(self, tenant_id: str, session_id: str, turn_id: str) -> TurnRecord: ...

    def turn_events(self, tenant_id: str, session_id: str, turn_id: str) -> list[EventRecord]: ...

    def fence_floor(self, tenant_id: str, session_id: str) -> int: ...

    # a delegation's join skips a child whose session was deleted (store/delegation.py)
    def get_tombstone(self, tenant_id: str, session_id: str) -> TombstoneRecord | None: ...


class StepTurns(JoinAnswers, Protocol):
    """The executor's transitions (``store.turns``): a lane's start, a step's commit,
    and a delegation's children admitted, cancelled and answered to their parent (the
    join's ``resolve_input``, store/delegation.py)."""

    def start(
        self,
        tenant_id: str,
        session_id: str,
        fence: int,
        *,
        claim: bool,
        agent_hashes: Sequence[str],
        max_attempts: int,
    ) -> LaneStarted: ...

    def append(
        self, tenant_id: str, session_id: str, fence: int, commit: StepCommit, /
    ) -> Appended: ...

    def admit(self, new: NewTurn, bounds: Bounds = ..., /) -> Admission: ...

    def request_cancel(
        self, tenant_id: str, session_id: str, turn_id: str, *, subject: str
    ) -> tuple[EventRecord, ...]: ...


class StepReruns(Protocol):
    """``store.reruns``: the one admission (store/admission.py) takes both admitting
    parts, though a child is never a rerun."""

    def admit_rerun(
        self, new: NewTurn, copies: Sequence[Mapping[str, Any]], bounds: Bounds = ..., /
    ) -> Admission: ...


class StepLimits(Protocol):
    """``store.max_running``: a head under a max_running limit starts under its lock."""

    def start_limited(
        self,
        tenant_id: str,
        session_id: str,
        fence: int,
        *,
        agent_name: str,
        agent_hashes: Sequence[str],
        max_attempts: int,
        tenant_max: int | None,
        agent_max: int | None,
        tenant_default: int | None = None,
    ) -> tuple[LaneStarted | None, str | None, bool]: ...


class StepProviderState(Protocol):
    """``store.provider_state``: a provider's opaque state, kept off the journal."""

    def provider_state(
        self, tenant_id: str, session_id: str, provider: str, seqs: Iterable[int]
    ) -> dict[int, dict[str, Any]]: ...


class StepPromotions(Protocol):
    """``store.promotions``: the version a delegated specialist runs."""

    def promoted_versions(self, tenant_id: str, agent_name: str, limit: int = 100) -> list[str]: ...


class StepRecall(Protocol):
    """``store.memory``: the facts a turn with memory recalls."""

    def recall_facts(
        self, tenant_id: str, scope_key: str, *, before: datetime, limit: int
    ) -> list[MemoryRecord]: ...


class StepStore(Protocol):
    """What the executor needs of the store (``turnkeep.store.facade.Store``): seven of
    its parts, each narrowed to the calls a turn's run makes."""

    @property
    def reads(self) -> StepReads: ...
    @property
    def turns(self) -> StepTurns: ...
    @property
    def reruns(self) -> StepReruns: ...
    @property
    def max_running(self) -> StepLimits: ...
    @property
    def provider_state(self) -> StepProviderState: ...
    @property
    def promotions(self) -> StepPromotions: ...
    @property
    def memory(self) -> StepRecall: ...


class EventSink(Protocol):
    """Where committed events and live deltas go (``turnkeep.store.channel.Publisher``)."""

    def committed(self, *events: EventRecord) -> None: ...

    def delta(
        self, tenant_id: str, session_id: str, turn_id: str, step: int, text: str
    ) -> None: ...


class LeaseCheck(Protocol):
    """The heartbeat's view of one held lease (``turnkeep.worker.heartbeat.Heartbeat``)."""

    lease: Lease

    @property
    def lost(self) -> bool: ...

    def check(self) -> None: ...

    def stop(self) -> None: ...


class Leases(Protocol):
    """Grants and releases session leases (``turnkeep.store.lease.LeaseManager``)."""

    def grant(
        self, tenant_id: str, session_id: str, owner: str, *, floor: int | Callable[[], int]
    ) -> Lease | None: ...

    def release(self, lease: Lease) -> Released: ...

    def raise_floor(self, floor: int) -> None: ...


class Secrets(Protocol):
    """Answers kept out of Postgres: external_auth credentials (store.secrets.SecretBox)."""

    def get(
        self, tenant_id: str, session_id: str, turn_id: str, request_id: str
    ) -> dict[str, Any] | None: ...

    def discard(self, tenant_id: str, session_id: str, turn_id: str, request_id: str) -> None: ...


class PacerPort(Protocol):
    """The shared rate-limit buckets and pace marks (``turnkeep.store.pacer.Pacer``; in memory:
    ``turnkeep.store.testing.memory_pacer.InMemoryPacer``)."""

    def reserve(
        self, buckets: Sequence[Bucket], tokens: int, *, max_wait: float | None = None
    ) -> Reservation: ...

    def settle(self, buckets: Sequence[Bucket], booked: int, used: int) -> None: ...

    def block(self, buckets: Sequence[Bucket], seconds: float) -> None: ...

    def mark(
        self, tenant_id: str, session_id: str, mark: Mark, *, until_ms: int, ttl: float
    ) -> None: ...

    def pending(self, tenant_id: str, session_id: str) -> Mark | None: ...


class Resources(Protocol):
    """What the executor needs of its process (``turnkeep.worker.resources.WorkerResources``; a
    fake in the unit tests)."""

    @property
    def settings(self) -> Settings: ...
    @property
    def owner_prefix(self) -> str: ...
    @property
    def store(self) -> StepStore: ...
    @property
    def leases(self) -> Leases: ...
    @property
    def publisher(self) -> EventSink: ...
    @property
    def agents(self) -> AgentRegistry: ...
    @property
    def secrets(self) -> Secrets: ...
    @property
    def redactor(self) -> Redactor: ...
    @property
    def pacer(self) -> PacerPort: ...

    def heartbeat(self, lease: Lease, *, granted_at: float) -> LeaseCheck: ...

    def reaches_postgres(self) -> bool: ...

    def enqueue(self, tenant_id: str, session_id: str) -> None: ...

    def wake(self, tenant_id: str, session_id: str, after: float) -> None:
        """Enqueue the session ``after`` seconds from now (a paced turn's slot)."""
        ...

    def live_definitions(self) -> tuple[set[str], set[str]]:
        """(definition hashes, agent names) the live workers serve (store/fleet.py)."""
        ...

    def hand_on(self, tenant_id: str, session_id: str, agent_hash: str) -> None:
        """Enqueue the session to the queue of the workers serving ``agent_hash``."""
        ...

    def deliver_webhook(self, tenant_id: str, session_id: str, turn_id: str) -> None: ...

    def advance_experiment(self, tenant_id: str, experiment_id: str) -> None:
        """Send an experiment's advance (recovery/experiments.py), best effort."""
        ...

    def tenant_max_running(self, tenant_id: str) -> int | None:
        """The tenant's max_running: declared, else the setting's, else None
        (worker/max_running.py)."""
        ...

    def hold(self, tenant_id: str, session_id: str, agent: str | None, since: float) -> None:
        """Hold the session until a slot of its scope frees: the tenant's limit, or
        (``agent``) that agent's in the tenant (store/held.py), in the place of
        ``since`` (its head's admission)."""
        ...

    def wake_held(self, tenant_id: str, agent: str) -> None:
        """A turn of ``agent`` in the tenant left ``running``: send one held session of
        the tenant's scope and one of the agent's that still wait."""
        ...

    def started_held(self, tenant_id: str, session_id: str, agent: str, room: bool) -> None:
        """The session's head of ``agent`` started under its limits: out of the held
        sets; with a slot of each scope left (``room``), the next held are woken."""
        ...
