"""In-memory fakes of what the executor needs (worker/ports.py), in the style of
procrastinate's InMemoryConnector or dramatiq's StubBroker: the runner's decisions
run in milliseconds with no Postgres, Redis or Celery.

``FakeStore.start``, ``FakeStore.append`` and ``FakeStore.request_cancel`` mirror the
``start_turn``, ``fenced_append`` and ``request_cancel`` statements of store/sql/
(fence check, revision compare-and-swap, declared transitions only, contiguous seq,
one outcome per step, the fused terminal event, ``lane_runnable``, usage added up, the
context from the newest compaction on, an unattended turn cancelled at once);
tests/contract/ runs the same cases against this fake and the real ``Store``. Not
mirrored: the context window's row and byte bounds, session usage, webhooks' rows.
Each test can inject a fault before any numbered call (a lost reply after or before
landing, a concurrent cancel request, a newer fence claimed by someone else).
"""

from __future__ import annotations

import dataclasses
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from runtime.definitions import AgentDefinition, AgentRegistry
from runtime.redact import Redactor
from runtime.settings import Settings
from runtime.signals import LeaseLost
from runtime.states import (
    ACTIVE_STATES,
    OUTCOME_EVENTS,
    PARKED_STATES,
    TRANSITIONS,
    UNATTENDED_STATES,
    EventType,
    TurnState,
)
from store.errors import NotFound, OutcomeAlreadyRecorded, TurnNotActive, Unavailable
from store.lease import Lease, Released
from store.records import Appended, EventRecord, Started, TurnRecord

Hook = Callable[["FakeStore"], None]

#: start_turn's context: earlier turns contribute their inputs and outcomes only
_CONTEXT_TYPES = frozenset(
    {
        EventType.TURN_ACCEPTED,
        EventType.MODEL_COMPLETED,
        EventType.TOOL_COMPLETED,
        EventType.TOOL_INTERRUPTED,
    }
)


def _now() -> datetime:
    return datetime.now(UTC)


def _added(total: Mapping[str, Any], step: Mapping[str, float] | None) -> dict[str, Any]:
    """fenced_append's usage: each key added up (a key either lacks counts as 0)."""
    if step is None:
        return dict(total)
    return {k: total.get(k, 0) + step.get(k, 0) for k in {*total, *step}}


class Crash(BaseException):
    """A process dying at an injected point: nothing catches it (not even ``except
    Exception``), as nothing survives a SIGKILL."""


@dataclass
class FakeSession:
    tenant_id: str
    session_id: str
    agent_name: str
    fence: int = 0
    head_seq: int = 0


@dataclass
class _Fault:
    #: run before the call (a concurrent writer, a crash)
    hooks: list[Hook] = field(default_factory=list)
    #: run after the call wrote its rows, before its reply (a writer right behind it)
    after: list[Hook] = field(default_factory=list)
    #: "before": raise Unavailable without writing; "after": write, then raise it
    unavailable: str | None = None


class FakeStore:
    """Sessions (fence, head_seq), turns and events, with the worker's statements."""

    def __init__(self) -> None:
        self.sessions: dict[tuple[str, str], FakeSession] = {}
        self.turns: dict[tuple[str, str, str], TurnRecord] = {}
        self.events: dict[tuple[str, str], list[EventRecord]] = defaultdict(list)
        self._ordinal = 0
        #: every call by name (start, append, get_turn, turn_events, fence_floor)
        self.calls: Counter[str] = Counter()
        #: the keyword arguments of every start and append call, landed or not
        self.start_calls: list[dict[str, Any]] = []
        self.append_calls: list[dict[str, Any]] = []
        #: appends that wrote their rows
        self.landed_appends = 0
        self._faults: dict[tuple[str, int], _Fault] = defaultdict(_Fault)
        #: the next this many reads (get_turn, turn_events, fence_floor) raise Unavailable
        self.unavailable_reads = 0
        #: turns with an undelivered webhook (a workflow node's): a settling append says so
        self.webhooks: set[tuple[str, str, str]] = set()

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

        def die(_: FakeStore) -> None:
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

    # -- the API's writes (admit_turn, request_cancel, resolve_input, claim_fence) --

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
        sess = self.sessions.setdefault(
            (tenant_id, session_id), FakeSession(tenant_id, session_id, agent.name)
        )
        assert sess.agent_name == agent.name, "session bound to another agent"
        assert (tenant_id, session_id, turn_id) not in self.turns, "turn id reused"
        sess.head_seq += 1
        self._ordinal += 1
        now = _now()
        turn = TurnRecord(
            tenant_id=tenant_id,
            session_id=session_id,
            turn_id=turn_id,
            ordinal=self._ordinal,
            state=TurnState.QUEUED,
            agent_name=agent.name,
            agent_hash=agent.definition_hash,
            input_hash=f"hash-of-{turn_id}",
            input={"messages": [{"role": "user", "content": text}]},
            output_schema=output_schema,
            budget=budget,
            attempt=0,
            revision=0,
            cancel_requested=False,
            pending_input=None,
            result=None,
            error=None,
            accepted_seq=sess.head_seq,
            submitted_by="tester",
            created_at=now,
            updated_at=now,
        )
        self.turns[(tenant_id, session_id, turn_id)] = turn
        self._event(turn, sess.head_seq, EventType.TURN_ACCEPTED, None, 0, {"input": turn.input})
        return turn

    def request_cancel(
        self, tenant_id: str, session_id: str, turn_id: str, *, subject: str = "tester"
    ) -> tuple[EventRecord, ...]:
        """A turn no worker steps (queued, waiting, parked) is cancelled at once; a
        running one gets the request, which its worker's next write reports."""
        turn = self.turns.get((tenant_id, session_id, turn_id))
        if turn is None:
            raise NotFound("turn not found")
        if turn.state.terminal:
            raise TurnNotActive(f"turn is {turn.state.value}")
        unattended = turn.state in UNATTENDED_STATES
        if turn.cancel_requested and not unattended:
            return ()
        sess = self.sessions[(tenant_id, session_id)]
        data = {"by": subject}
        if not unattended:
            turn = self._put(turn, cancel_requested=True)
            sess.head_seq += 1
            return (
                self._event(turn, sess.head_seq, EventType.TURN_CANCEL_REQUESTED, None, 0, data),
            )
        turn = self._put(
            turn,
            cancel_requested=True,
            state=TurnState.CANCELLED,
            revision=turn.revision + 1,
            pending_input=None,
        )
        sess.head_seq += 2
        return (
            self._event(turn, sess.head_seq - 1, EventType.TURN_CANCEL_REQUESTED, None, 0, data),
            self._event(turn, sess.head_seq, EventType.TURN_CANCELLED, None, 0, dict(data)),
        )

    def resolve_input(
        self,
        tenant_id: str,
        session_id: str,
        turn_id: str,
        request_id: str,
        response: Mapping[str, Any],
    ) -> None:
        turn = self.turns[(tenant_id, session_id, turn_id)]
        pending = turn.pending_input
        assert turn.state in PARKED_STATES and pending is not None
        assert pending["request_id"] == request_id and not pending.get("resolved")
        resolved = {**pending, "resolved": True, "response": dict(response), "by": "tester"}
        self._put(turn, pending_input=resolved, revision=turn.revision + 1)
        sess = self.sessions[(tenant_id, session_id)]
        sess.head_seq += 1
        data = {
            "request_id": request_id,
            "kind": pending["kind"],
            "step": pending["step"],
            "response": dict(response),
            "by": "tester",
        }
        self._event(turn, sess.head_seq, EventType.INPUT_RESOLVED, None, 0, data)

    def claim(self, tenant_id: str, session_id: str, fence: int) -> bool:
        """claim_fence: another worker takes the session with a newer fence."""
        sess = self.sessions[(tenant_id, session_id)]
        if sess.fence >= fence:
            return False
        sess.fence = fence
        return True

    # -- StepStore ---------------------------------------------------------------

    def start(
        self,
        tenant_id: str,
        session_id: str,
        fence: int,
        *,
        claim: bool,
        agent_hashes: Sequence[str],
        max_attempts: int,
    ) -> Started:
        self.start_calls.append(
            {
                "tenant_id": tenant_id,
                "session_id": session_id,
                "fence": fence,
                "claim": claim,
                "agent_hashes": list(agent_hashes),
                "max_attempts": max_attempts,
            }
        )
        fault = self._enter("start")
        started = self._start(tenant_id, session_id, fence, claim, agent_hashes, max_attempts)
        self._leave("start", fault)
        return started

    def _start(
        self,
        tenant_id: str,
        session_id: str,
        fence: int,
        claim: bool,
        agent_hashes: Sequence[str],
        max_attempts: int,
    ) -> Started:
        sess = self.sessions.get((tenant_id, session_id))
        if sess is None:  # no session row: the statement returns nothing
            return Started(claimed=False, stored_fence=0, head=None)
        stored = sess.fence
        head = self.lane_head(tenant_id, session_id)
        go = (
            head is not None
            and head.runnable
            and head.agent_hash in agent_hashes
            and (head.state in PARKED_STATES or head.attempt < max_attempts)
        )
        if not (stored < fence if claim else stored == fence):
            return Started(claimed=False, stored_fence=stored, head=head)
        sess.fence = fence
        if not go or head is None:
            return Started(claimed=True, stored_fence=stored, head=head)
        assert TurnState.RUNNING in TRANSITIONS[head.state]
        # the context is read from the statement's snapshot: before turn.started
        context = self._context(tenant_id, session_id, head)
        sess.head_seq += 1
        inc = 0 if head.state in PARKED_STATES else 1
        turn = self._put(
            head,
            state=TurnState.RUNNING,
            revision=head.revision + 1,
            attempt=head.attempt + inc,
            pending_input=None,
        )
        begun = self._event(
            turn, sess.head_seq, EventType.TURN_STARTED, None, fence, {"attempt": turn.attempt}
        )
        return Started(
            claimed=True,
            stored_fence=stored,
            head=head,
            turn=turn,
            prior=tuple(e for e in context if e.turn_id != turn.turn_id),
            events=(*(e for e in context if e.turn_id == turn.turn_id), begun),
        )

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
    ) -> Appended:
        self.append_calls.append(
            {
                "turn_id": turn_id,
                "fence": fence,
                "revision": revision,
                "state": state,
                "type": type,
                "data": dict(data),
                "step": step,
                "attempt_inc": attempt_inc,
                "result": result,
                "error": error,
                "pending_input": pending_input,
                "then": then,
                "usage": usage,
            }
        )
        fault = self._enter("append")
        sess = self.sessions.get((tenant_id, session_id))
        turn = self.turns.get((tenant_id, session_id, turn_id))
        if (
            sess is None
            or sess.fence != fence
            or turn is None
            or turn.revision != revision
            or state not in TRANSITIONS[turn.state]
        ):
            raise LeaseLost(f"fence {fence} or revision {revision} is no longer current")
        if type in OUTCOME_EVENTS and step is not None:
            for e in self._session_events(tenant_id, session_id):
                if e.turn_id == turn_id and e.step == step and e.type in OUTCOME_EVENTS:
                    raise OutcomeAlreadyRecorded(f"step {step} already has an outcome")
        n = 1 if then is None else 2
        sess.head_seq += n
        turn = self._put(
            turn,
            state=state,
            revision=turn.revision + 1,
            attempt=turn.attempt + attempt_inc,
            result=turn.result if result is None else dict(result),
            error=turn.error if error is None else dict(error),
            pending_input=None if pending_input is None else dict(pending_input),
            usage=_added(turn.usage, usage),
        )
        written = [self._event(turn, sess.head_seq - n + 1, type, step, fence, dict(data))]
        if then is not None:
            written.append(self._event(turn, sess.head_seq, then[0], None, fence, dict(then[1])))
        lane_runnable = False
        if state.terminal:
            nxt = self.lane_head(tenant_id, session_id)
            lane_runnable = nxt is not None and nxt.runnable
        self.landed_appends += 1
        self._leave("append", fault)
        return Appended(
            revision=turn.revision,
            attempt=turn.attempt,
            cancel_requested=turn.cancel_requested,
            events=tuple(written),
            lane_runnable=lane_runnable,
            webhook=state.terminal and (tenant_id, session_id, turn_id) in self.webhooks,
        )

    def get_turn(self, tenant_id: str, session_id: str, turn_id: str) -> TurnRecord:
        self._read("get_turn")
        try:
            return self.turns[(tenant_id, session_id, turn_id)]
        except KeyError:
            raise NotFound("turn not found") from None

    def turn_events(self, tenant_id: str, session_id: str, turn_id: str) -> list[EventRecord]:
        self._read("turn_events")
        return [e for e in self._session_events(tenant_id, session_id) if e.turn_id == turn_id]

    def fence_floor(self, tenant_id: str, session_id: str) -> int:
        self._read("fence_floor")
        sess = self.sessions.get((tenant_id, session_id))
        return 0 if sess is None else sess.fence

    # -- reads for assertions ----------------------------------------------------

    def session(self, tenant_id: str, session_id: str) -> FakeSession:
        return self.sessions[(tenant_id, session_id)]

    def turn(self, tenant_id: str, session_id: str, turn_id: str) -> TurnRecord:
        return self.turns[(tenant_id, session_id, turn_id)]

    def journal(self, tenant_id: str, session_id: str) -> list[EventRecord]:
        return list(self._session_events(tenant_id, session_id))

    def types(
        self, tenant_id: str, session_id: str, turn_id: str | None = None
    ) -> list[tuple[str, int | None]]:
        return [
            (e.type, e.step)
            for e in self._session_events(tenant_id, session_id)
            if turn_id is None or e.turn_id == turn_id
        ]

    def lane_head(self, tenant_id: str, session_id: str) -> TurnRecord | None:
        active = [
            t
            for (tid, sid, _), t in self.turns.items()
            if (tid, sid) == (tenant_id, session_id) and t.state in ACTIVE_STATES
        ]
        return min(active, key=lambda t: t.ordinal, default=None)

    def check_invariants(self) -> None:
        """What the chaos tests check: seq contiguous, one outcome per step, fences of
        a session's worker events never going down, terminal turns with a result or
        an error."""
        for (tenant_id, session_id), sess in self.sessions.items():
            journal = self._session_events(tenant_id, session_id)
            assert [e.seq for e in journal] == list(range(1, sess.head_seq + 1))
            outcomes = [(e.turn_id, e.step) for e in journal if e.type in OUTCOME_EVENTS]
            assert len(outcomes) == len(set(outcomes)), outcomes
            fences = [e.fence for e in journal if e.fence]
            assert fences == sorted(fences), fences
        for turn in self.turns.values():
            if turn.state is TurnState.COMPLETED:
                assert turn.result is not None
            if turn.state is TurnState.FAILED:
                assert turn.error is not None

    # -- internals ---------------------------------------------------------------

    def _context(self, tenant_id: str, session_id: str, head: TurnRecord) -> list[EventRecord]:
        """start_turn's context: the newest compaction (an earlier turn's) and the
        earlier turns' inputs and outcomes after what it covers, then every event of
        the head; ordered by turn, then seq."""
        journal = self._session_events(tenant_id, session_id)
        compactions = [e for e in journal if e.type == EventType.CONTEXT_COMPACTED]
        base = compactions[-1] if compactions else None
        after = 0 if base is None else int(base.data.get("to_seq") or base.seq - 1)
        earlier = [
            e
            for e in journal
            if e.turn_id != head.turn_id
            and e.seq > after
            and e.type in _CONTEXT_TYPES
            and not (e.type == EventType.TURN_ACCEPTED and e.seq > head.accepted_seq)
        ]
        if base is not None and base.turn_id != head.turn_id:
            earlier.insert(0, base)
        order = {id(e): (-1 if e is base else self._ordinal_of(e), e.seq) for e in earlier}
        earlier.sort(key=lambda e: order[id(e)])
        return [*earlier, *(e for e in journal if e.turn_id == head.turn_id)]

    def _session_events(self, tenant_id: str, session_id: str) -> list[EventRecord]:
        return sorted(self.events[(tenant_id, session_id)], key=lambda e: e.seq)

    def _ordinal_of(self, e: EventRecord) -> int:
        return self.turns[(e.tenant_id, e.session_id, e.turn_id)].ordinal

    def _put(self, turn: TurnRecord, **changed: Any) -> TurnRecord:
        new = dataclasses.replace(turn, **changed, updated_at=_now())
        self.turns[(turn.tenant_id, turn.session_id, turn.turn_id)] = new
        return new

    def _event(
        self,
        turn: TurnRecord,
        seq: int,
        type: EventType,
        step: int | None,
        fence: int,
        data: dict[str, Any],
    ) -> EventRecord:
        journal = self.events[(turn.tenant_id, turn.session_id)]
        assert all(e.seq != seq for e in journal), f"seq {seq} taken twice"
        event = EventRecord(
            tenant_id=turn.tenant_id,
            session_id=turn.session_id,
            seq=seq,
            turn_id=turn.turn_id,
            type=type.value,
            step=step,
            fence=fence,
            data=data,
            created_at=_now(),
        )
        journal.append(event)
        return event


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
class FakeContext:
    """The worker context: settings built directly, a registry of the tests' agents,
    the fakes above, and every enqueue recorded."""

    agents: AgentRegistry
    settings: Settings = field(default_factory=lambda: Settings(max_attempts=3))
    store: FakeStore = field(default_factory=FakeStore)
    leases: FakeLeases = field(default_factory=FakeLeases)
    publisher: FakePublisher = field(default_factory=FakePublisher)
    secrets: FakeSecrets = field(default_factory=FakeSecrets)
    #: the built-in patterns only, unless a test gives its own values
    redactor: Redactor = field(default_factory=Redactor)
    owner_prefix: str = "unit:1:abcdef"
    enqueued: list[tuple[str, str]] = field(default_factory=list)
    #: prompt webhook deliveries sent (a settled turn with a webhook)
    webhooks: list[tuple[str, str, str]] = field(default_factory=list)
    heartbeats: list[FakeHeartbeat] = field(default_factory=list)
    #: set on every heartbeat handed out from now on (a lease lost before the run)
    lose_leases: bool = False
    #: False: the process's Postgres probe has heard nothing for over a lease TTL
    postgres: bool = True

    def heartbeat(self, lease: Lease, *, granted_at: float) -> FakeHeartbeat:
        hb = FakeHeartbeat(lease)
        hb.lost = self.lose_leases
        self.heartbeats.append(hb)
        return hb

    def reaches_postgres(self) -> bool:
        return self.postgres

    def enqueue(self, tenant_id: str, session_id: str) -> None:
        self.enqueued.append((tenant_id, session_id))

    def deliver_webhook(self, tenant_id: str, session_id: str, turn_id: str) -> None:
        self.webhooks.append((tenant_id, session_id, turn_id))
