"""What the executor needs of the world (worker/ports.py), in memory, in the style of
procrastinate's InMemoryConnector or dramatiq's StubBroker: the runner's decisions
run in milliseconds with no Postgres, Redis or Celery.

The store is the real one: ``UnitStore`` is ``turnkeep.store.facade.Store`` over the shipped
in-memory connector (store/testing/, held to Postgres by tests/contract/), so the
statements the executor's calls run and the facade's own code are the ones a worker
runs. What ``UnitStore`` adds is the tests': each test can inject a fault before any
numbered call (a lost reply after or before landing, a concurrent cancel request, a
newer fence claimed by someone else) and count what was called. The lease, publisher,
heartbeat, secrets and the worker process's resources are fakes of their own.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

from turnkeep.runtime.agents.definition import AgentDefinition
from turnkeep.runtime.agents.registry import AgentRegistry
from turnkeep.runtime.obs.redact import Redactor
from turnkeep.runtime.settings import Settings
from turnkeep.runtime.signals import LeaseLost
from turnkeep.runtime.states import OUTCOME_EVENTS, TurnState
from turnkeep.store.errors import Unavailable
from turnkeep.store.facade import Store
from turnkeep.store.lease import Lease, Released
from turnkeep.store.new_turn import NewTurn
from turnkeep.store.reads import Reads
from turnkeep.store.records import Appended, EventRecord, LaneStarted, SessionRecord, TurnRecord
from turnkeep.store.rows import event_record, session_record, turn_record
from turnkeep.store.step_commit import StepCommit
from turnkeep.store.testing import InMemoryConnector
from turnkeep.store.testing.memory_pacer import InMemoryPacer
from turnkeep.store.turns import Turns

Hook = Callable[["UnitStore"], None]


class Crash(BaseException):
    """A process dying at an injected point: nothing catches it (not even ``except
    Exception``), as nothing survives a SIGKILL."""


@dataclass
class _Fault:
    #: run before the call (a concurrent writer, a crash)
    hooks: list[Hook] = field(default_factory=list)
    #: run after the call wrote its rows, before its reply (a writer right behind it)
    after: list[Hook] = field(default_factory=list)
    #: "before": raise Unavailable without writing; "after": write, then raise it
    unavailable: str | None = None


class _CountedTurns(Turns):
    """The ``turns`` part with the executor's ``start`` and ``append`` counted and
    faulted by its ``UnitStore``."""

    def __init__(self, unit: UnitStore) -> None:
        super().__init__(unit.connector, reads=unit.reads, waits=unit.waits, context=unit.context)
        self._unit = unit

    def start(
        self,
        tenant_id: str,
        session_id: str,
        fence: int,
        *,
        claim: bool,
        agent_hashes: Sequence[str],
        max_attempts: int,
    ) -> LaneStarted:
        unit = self._unit
        kw = {"claim": claim, "agent_hashes": list(agent_hashes), "max_attempts": max_attempts}
        unit.start_calls.append(
            {"tenant_id": tenant_id, "session_id": session_id, "fence": fence, **kw}
        )
        fault = unit._enter("start")
        started = super().start(tenant_id, session_id, fence, **kw)
        unit._leave("start", fault)
        return started

    def append(self, tenant_id: str, session_id: str, fence: int, commit: StepCommit) -> Appended:
        """``Store.turns.append`` counted and faulted; ``append_calls`` keeps every field
        of the commit, and its fence."""
        unit = self._unit
        call = {f.name: getattr(commit, f.name) for f in fields(commit)}
        unit.append_calls.append({**call, "fence": fence, "data": dict(commit.data)})
        fault = unit._enter("append")
        appended = super().append(tenant_id, session_id, fence, commit)
        unit.landed_appends += 1
        unit._leave("append", fault)
        return appended


class _CountedReads(Reads):
    """The ``reads`` part with the executor's reads counted (and made to fail) by its
    ``UnitStore``."""

    def __init__(self, unit: UnitStore) -> None:
        super().__init__(unit.connector)
        self._unit = unit

    def get_turn(self, tenant_id: str, session_id: str, turn_id: str) -> TurnRecord:
        self._unit._read("get_turn")
        return super().get_turn(tenant_id, session_id, turn_id)

    def turn_events(self, tenant_id: str, session_id: str, turn_id: str) -> list[EventRecord]:
        self._unit._read("turn_events")
        return super().turn_events(tenant_id, session_id, turn_id)

    def fence_floor(self, tenant_id: str, session_id: str) -> int:
        self._unit._read("fence_floor")
        return super().fence_floor(tenant_id, session_id)


class UnitStore(Store):
    """The real ``Store`` over the in-memory connector (store/testing/), with fault
    points on the executor's calls and the tests' shortcuts and reads.

    The statements and the facade's code are the shipped ones; this class only counts
    and records the executor's calls (``turns.start``, ``turns.append`` and its
    ``reads``), runs a test's hooks around them and loses their replies, as a network
    or a crash would. The shortcuts (``admit``, ``answer``, ``request_cancel``,
    ``add_webhook``) and the reads for assertions (``turn``, ``journal``, ``session``,
    ``all_turns``) are not counted."""

    def __init__(self) -> None:
        self.in_memory = InMemoryConnector()
        super().__init__(self.in_memory)
        # the parts the executor's calls are counted on; the rest are the shipped ones
        self.reads = _CountedReads(self)
        self.turns = _CountedTurns(self)
        #: every executor call by name (start, append, get_turn, turn_events, fence_floor)
        self.calls: Counter[str] = Counter()
        #: the keyword arguments of every start and append call, landed or not
        self.start_calls: list[dict[str, Any]] = []
        self.append_calls: list[dict[str, Any]] = []
        #: appends that wrote their rows
        self.landed_appends = 0
        self._faults: dict[tuple[str, int], _Fault] = defaultdict(_Fault)
        #: the next this many reads (get_turn, turn_events, fence_floor) raise Unavailable
        self.unavailable_reads = 0

    # -- fault injection ---------------------------------------------------------

    def before(self, call: str, n: int, hook: Hook) -> None:
        """Run ``hook(store)`` just before the ``n``-th ``call`` ("start" or "append",
        counted from 1) is applied."""
        self._faults[(call, n)].hooks.append(hook)

    def after(self, call: str, n: int, hook: Hook) -> None:
        """Run ``hook(store)`` once the ``n``-th ``call`` wrote, before it replies."""
        self._faults[(call, n)].after.append(hook)

    def lose_reply(self, call: str, n: int, *, landed: bool) -> None:
        """The ``n``-th ``call`` raises ``Unavailable``: after writing (``landed``; the
        reply was lost) or before (the statement never reached Postgres)."""
        self._faults[(call, n)].unavailable = "after" if landed else "before"

    def crash_before(self, call: str, n: int) -> None:
        """The process dies just before the ``n``-th ``call`` is sent."""

        def die(_: UnitStore) -> None:
            raise Crash(f"{call} #{n}")

        self.before(call, n, die)

    def _enter(self, call: str) -> _Fault | None:
        self.calls[call] += 1
        fault = self._faults.pop((call, self.calls[call]), None)
        if fault is None:
            return None
        for hook in fault.hooks:
            hook(self)
        if fault.unavailable == "before":
            raise Unavailable(f"{call}: connection refused")
        return fault

    def _leave(self, call: str, fault: _Fault | None) -> None:
        if fault is None:
            return
        for hook in fault.after:
            hook(self)
        if fault.unavailable == "after":
            raise Unavailable(f"{call}: the reply was lost")

    def _read(self, name: str) -> None:
        self.calls[name] += 1
        if self.unavailable_reads > 0:
            self.unavailable_reads -= 1
            raise Unavailable(f"{name}: connection refused")

    # -- the tests' shortcuts (the API's writes, through the same statements) -----

    def admit(
        self,
        tenant_id: str,
        session_id: str,
        turn_id: str,
        agent: AgentDefinition,
        text: str,
        *,
        output_schema: dict[str, Any] | None = None,
        budget: dict[str, Any] | None = None,
    ) -> TurnRecord:
        """Admit a turn of ``agent`` saying ``text``, as the API would (``admit_turn``)."""
        admission = self.turns.admit(
            NewTurn(
                tenant_id=tenant_id,
                session_id=session_id,
                turn_id=turn_id,
                agent_name=agent.name,
                agent_hash=agent.definition_hash,
                input_hash=f"hash-of-{turn_id}",
                input={"messages": [{"role": "user", "content": text}]},
                output_schema=output_schema,
                budget=budget,
                submitted_by="tester",
                agent_version=agent.version,
                on_deploy=agent.on_deploy.value,
            )
        )
        assert admission.created, "turn id reused"
        return admission.turn

    def request_cancel(
        self, tenant_id: str, session_id: str, turn_id: str, *, subject: str = "tester"
    ) -> tuple[EventRecord, ...]:
        return self.turns.request_cancel(tenant_id, session_id, turn_id, subject=subject)

    def answer(
        self,
        tenant_id: str,
        session_id: str,
        turn_id: str,
        request_id: str,
        response: Mapping[str, Any],
    ) -> EventRecord:
        """Answer an open input request as its starter (``resolve_input``)."""
        return self.turns.resolve_input(
            tenant_id, session_id, turn_id, request_id, response=response, subject="tester"
        )

    def add_webhook(self, tenant_id: str, session_id: str, turn_id: str) -> None:
        """Give an admitted turn a workflow node's webhook (``insert_webhook``)."""
        self.in_memory.rows(
            "insert_webhook",
            {
                "tenant_id": tenant_id,
                "session_id": session_id,
                "turn_id": turn_id,
                "run_id": "run",
                "node_id": turn_id,
                "url": "http://127.0.0.1:9/hook",
                "secret_id": "s",
                "delivery_id": f"d-{turn_id}",
            },
            tenant=tenant_id,
        )

    # -- reads for assertions (straight from the tables: not counted) --------------

    def session(self, tenant_id: str, session_id: str) -> SessionRecord:
        return session_record(self.in_memory.tables.sessions[(tenant_id, session_id)])

    def turn(self, tenant_id: str, session_id: str, turn_id: str) -> TurnRecord:
        return turn_record(self.in_memory.tables.turns[(tenant_id, session_id, turn_id)])

    @property
    def all_turns(self) -> dict[tuple[str, str, str], TurnRecord]:
        """Every turn stored, by (tenant, session, turn id)."""
        return {k: turn_record(r) for k, r in self.in_memory.tables.turns.items()}

    def journal(self, tenant_id: str, session_id: str) -> list[EventRecord]:
        return [event_record(r) for r in self.in_memory.tables.journal(tenant_id, session_id)]

    def types(
        self, tenant_id: str, session_id: str, turn_id: str | None = None
    ) -> list[tuple[str, int | None]]:
        return [
            (e.type, e.step)
            for e in self.journal(tenant_id, session_id)
            if turn_id is None or e.turn_id == turn_id
        ]

    def check_invariants(self) -> None:
        """What the chaos tests check: seq contiguous, one outcome per step, fences of
        a session's worker events never going down, terminal turns with a result or
        an error."""
        tables = self.in_memory.tables
        for tenant_id, session_id in tables.sessions:
            sess = self.session(tenant_id, session_id)
            journal = self.journal(tenant_id, session_id)
            assert [e.seq for e in journal] == list(range(1, sess.head_seq + 1))
            outcomes = [(e.turn_id, e.step) for e in journal if e.type in OUTCOME_EVENTS]
            assert len(outcomes) == len(set(outcomes)), outcomes
            fences = [e.fence for e in journal if e.fence]
            assert fences == sorted(fences), fences
        for row in tables.turns.values():
            turn = turn_record(row)
            if turn.state is TurnState.COMPLETED:
                assert turn.result is not None
            if turn.state is TurnState.FAILED:
                assert turn.error is not None


class FakeLeases:
    """The Redis lease: one fence counter, one lease and one rerun flag per session.

    ``busy``: another worker holds every session (grants answer None and leave the
    session's rerun flag, which the holder's release reports)."""

    def __init__(self, counter: int = 0) -> None:
        #: the fence counter; None: Redis lost it (the grant reads the floor then)
        self.counter: int | None = counter
        self.busy = False
        self.held: dict[tuple[str, str], Lease] = {}
        self.rerun_flags: set[tuple[str, str]] = set()
        self.grants: list[Lease | None] = []
        self.releases: list[Released] = []
        self.floors: list[int] = []

    def grant(
        self, tenant_id: str, session_id: str, owner: str, *, floor: int | Callable[[], int]
    ) -> Lease | None:
        key = (tenant_id, session_id)
        if self.busy or key in self.held:
            self.rerun_flags.add(key)
            self.grants.append(None)
            return None
        if self.counter is None:
            known = floor if isinstance(floor, int) else floor()
            self.counter = known + 1
        else:
            self.counter += 1
            if isinstance(floor, int) and self.counter <= floor:
                self.counter = floor + 1
        lease = Lease(tenant_id, session_id, owner, self.counter)
        self.held[key] = lease
        self.grants.append(lease)
        return lease

    def release(self, lease: Lease) -> Released:
        key = (lease.tenant_id, lease.session_id)
        if self.held.get(key) != lease:
            released = Released(released=False, rerun=False)
        else:
            del self.held[key]
            released = Released(released=True, rerun=key in self.rerun_flags)
            self.rerun_flags.discard(key)
        self.releases.append(released)
        return released

    def raise_floor(self, floor: int) -> None:
        self.floors.append(floor)
        self.counter = max(self.counter or 0, floor)


class FakePublisher:
    """Records committed events and live deltas in the order they were published."""

    def __init__(self) -> None:
        self.events: list[EventRecord] = []
        self.deltas: list[tuple[str, int, str]] = []

    def committed(self, *events: EventRecord) -> None:
        self.events.extend(events)

    def delta(self, tenant_id: str, session_id: str, turn_id: str, step: int, text: str) -> None:
        self.deltas.append((turn_id, step, text))


class FakeHeartbeat:
    """One held lease's liveness; ``lost`` is settable and sticky like the real one."""

    def __init__(self, lease: Lease) -> None:
        self.lease = lease
        self._lost = False
        self.checks = 0
        self.stopped = False

    @property
    def lost(self) -> bool:
        return self._lost

    @lost.setter
    def lost(self, value: bool) -> None:
        self._lost = self._lost or value

    def check(self) -> None:
        self.checks += 1
        if self._lost:
            raise LeaseLost("the session lease was lost (fake heartbeat)")

    def stop(self) -> None:
        self.stopped = True


@dataclass
class FakeSecrets:
    """The Redis secret box: a dict; ``lost()`` forgets everything, as a restart would."""

    values: dict[tuple[str, str, str, str], dict[str, Any]] = field(default_factory=dict)

    def put(
        self, tenant_id: str, session_id: str, turn_id: str, request_id: str, value: dict[str, Any]
    ) -> None:
        self.values[(tenant_id, session_id, turn_id, request_id)] = dict(value)

    def get(
        self, tenant_id: str, session_id: str, turn_id: str, request_id: str
    ) -> dict[str, Any] | None:
        return self.values.get((tenant_id, session_id, turn_id, request_id))

    def discard(self, tenant_id: str, session_id: str, turn_id: str, request_id: str) -> None:
        self.values.pop((tenant_id, session_id, turn_id, request_id), None)


@dataclass
class FakeResources:
    """The worker process's resources (worker.ports.Resources): settings built
    directly, a registry of the tests' agents, the fakes above, and every enqueue
    recorded."""

    agents: AgentRegistry
    settings: Settings = field(default_factory=lambda: Settings(worker={"max_attempts": 3}))
    store: UnitStore = field(default_factory=UnitStore)
    leases: FakeLeases = field(default_factory=FakeLeases)
    publisher: FakePublisher = field(default_factory=FakePublisher)
    secrets: FakeSecrets = field(default_factory=FakeSecrets)
    #: the built-in patterns only, unless a test gives its own values
    redactor: Redactor = field(default_factory=Redactor)
    owner_prefix: str = "unit:1:abcdef"
    enqueued: list[tuple[str, str]] = field(default_factory=list)
    #: prompt webhook deliveries sent (a settled turn with a webhook)
    webhooks: list[tuple[str, str, str]] = field(default_factory=list)
    #: experiments' advances sent (a case's turn settled or parked)
    advances: list[tuple[str, str]] = field(default_factory=list)
    heartbeats: list[FakeHeartbeat] = field(default_factory=list)
    #: set on every heartbeat handed out from now on (a lease lost before the run)
    lose_leases: bool = False
    #: False: the process's Postgres probe has heard nothing for over a lease TTL
    postgres: bool = True
    #: what the other live workers serve: (definition hashes, agent names)
    fleet: tuple[set[str], set[str]] = field(default_factory=lambda: (set(), set()))
    #: sessions handed on to a definition's queue: (tenant, session, hash)
    handed_on: list[tuple[str, str, str]] = field(default_factory=list)
    #: the shared rate-limit buckets (store/testing/memory_pacer.py)
    pacer: InMemoryPacer = field(default_factory=InMemoryPacer)
    #: sessions sent again for a paced turn's slot: (tenant, session, seconds)
    woken: list[tuple[str, str, float]] = field(default_factory=list)
    #: sessions held at a max_running limit: (tenant, session, agent or None)
    held: list[tuple[str, str, str | None]] = field(default_factory=list)
    #: wakes after a limited turn left running: (tenant, agent)
    held_woken: list[tuple[str, str]] = field(default_factory=list)
    #: limited starts: (tenant, session, agent, a slot of each scope left)
    held_left: list[tuple[str, str, str, bool]] = field(default_factory=list)

    def live_definitions(self) -> tuple[set[str], set[str]]:
        return self.fleet

    def hand_on(self, tenant_id: str, session_id: str, agent_hash: str) -> None:
        self.handed_on.append((tenant_id, session_id, agent_hash))

    def heartbeat(self, lease: Lease, *, granted_at: float) -> FakeHeartbeat:
        hb = FakeHeartbeat(lease)
        hb.lost = self.lose_leases
        self.heartbeats.append(hb)
        return hb

    def reaches_postgres(self) -> bool:
        return self.postgres

    def enqueue(self, tenant_id: str, session_id: str) -> None:
        self.enqueued.append((tenant_id, session_id))

    def wake(self, tenant_id: str, session_id: str, after: float) -> None:
        self.woken.append((tenant_id, session_id, after))

    def tenant_max_running(self, tenant_id: str) -> int | None:
        return self.settings.limits.max_running_per_tenant

    def hold(self, tenant_id: str, session_id: str, agent: str | None, since: float) -> None:
        self.held.append((tenant_id, session_id, agent))

    def wake_held(self, tenant_id: str, agent: str) -> None:
        self.held_woken.append((tenant_id, agent))

    def started_held(self, tenant_id: str, session_id: str, agent: str, room: bool) -> None:
        self.held_left.append((tenant_id, session_id, agent, room))

    def deliver_webhook(self, tenant_id: str, session_id: str, turn_id: str) -> None:
        self.webhooks.append((tenant_id, session_id, turn_id))

    def advance_experiment(self, tenant_id: str, experiment_id: str) -> None:
        self.advances.append((tenant_id, experiment_id))
