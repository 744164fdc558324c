"""What the executor needs of the world, as Protocols: the real store, lease manager,
publisher and heartbeat satisfy them, and so do the in-memory fakes that test the
runner's decisions in milliseconds (tests/unit/test_executor.py)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from runtime.agents.registry import AgentRegistry
from runtime.obs.redact import Redactor
from runtime.settings import Settings
from runtime.states import EventType, TurnState
from store.lease import Lease, Released
from store.records import Appended, EventRecord, Started, TurnRecord
from worker.delegation import DelegationStore
from worker.memory import MemoryStore


class StepStore(DelegationStore, MemoryStore, Protocol):
    """What the executor needs of the store (``store.facade.Store``; an
    in-memory fake in the unit tests), delegation's statements included."""

    def start(
        self,
        tenant_id: str,
        session_id: str,
        fence: int,
        *,
        claim: bool,
        agent_hashes: Sequence[str],
        max_attempts: int,
    ) -> Started: ...

    def append(
        self,
        *,
        tenant_id: str,
        session_id: str,
        turn_id: str,
        fence: int,
        revision: int,
        state: TurnState,
        type: EventType,
        data: Mapping[str, Any],
        step: int | None = None,
        attempt_inc: int = 0,
        result: Mapping[str, Any] | None = None,
        error: Mapping[str, Any] | None = None,
        pending_input: Mapping[str, Any] | None = None,
        then: tuple[EventType, Mapping[str, Any]] | None = None,
        usage: Mapping[str, float] | None = None,
    ) -> Appended: ...

    def get_turn(self, tenant_id: str, session_id: str, turn_id: str) -> TurnRecord: ...

    def turn_events(self, tenant_id: str, session_id: str, turn_id: str) -> list[EventRecord]: ...

    def fence_floor(self, tenant_id: str, session_id: str) -> int: ...


class EventSink(Protocol):
    """Where committed events and live deltas go (``store.channel.Publisher``)."""

    def committed(self, *events: EventRecord) -> None: ...

    def delta(
        self, tenant_id: str, session_id: str, turn_id: str, step: int, text: str
    ) -> None: ...


class LeaseCheck(Protocol):
    """The heartbeat's view of one held lease (``worker.heartbeat.Heartbeat``)."""

    lease: Lease

    @property
    def lost(self) -> bool: ...

    def check(self) -> None: ...

    def stop(self) -> None: ...


class Leases(Protocol):
    """Grants and releases session leases (``store.lease.LeaseManager``)."""

    def grant(
        self, tenant_id: str, session_id: str, owner: str, *, floor: int | Callable[[], int]
    ) -> Lease | None: ...

    def release(self, lease: Lease) -> Released: ...

    def raise_floor(self, floor: int) -> None: ...


class Secrets(Protocol):
    """Answers kept out of Postgres: external_auth credentials (``store.secrets.SecretBox``)."""

    def get(
        self, tenant_id: str, session_id: str, turn_id: str, request_id: str
    ) -> dict[str, Any] | None: ...

    def discard(self, tenant_id: str, session_id: str, turn_id: str, request_id: str) -> None: ...


class Resources(Protocol):
    """What the executor needs of its process (``worker.resources.WorkerResources``; a
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

    def heartbeat(self, lease: Lease, *, granted_at: float) -> LeaseCheck: ...

    def reaches_postgres(self) -> bool: ...

    def enqueue(self, tenant_id: str, session_id: str) -> None: ...

    def deliver_webhook(self, tenant_id: str, session_id: str, turn_id: str) -> None: ...
