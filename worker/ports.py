"""What the executor needs of the world: the store is the facade itself (over the
in-memory connector in tests/unit/test_executor.py); the lease manager, publisher and
heartbeat are Protocols their real classes and the unit tests' fakes satisfy."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

from turnkeep.runtime.agents.registry import AgentRegistry
from turnkeep.runtime.obs.redact import Redactor
from turnkeep.runtime.settings import Settings
from turnkeep.store.facade import Store
from turnkeep.store.lease import Lease, Released
from turnkeep.store.pacer import Bucket, Mark, Reservation
from turnkeep.store.records import EventRecord

#: What the executor needs of the store: the facade itself. The unit tests run the same
#: class over the in-memory connector (store/testing/), so no Protocol restates its
#: signatures.
StepStore = Store


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
