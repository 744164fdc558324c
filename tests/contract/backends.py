"""The two stores the contract holds to one behaviour: the real ``Store`` over the
in-memory connector (store/testing/, the executor's unit tests' store) and over
Postgres. Both are the same facade, so every call a case makes runs the same Python;
only the statements are answered by Python dicts or by Postgres.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from turnkeep.runtime.demo import AGENTS
from turnkeep.runtime.states import EventType
from turnkeep.store.new_turn import Bounds, NewTurn
from turnkeep.store.records import Admission, Appended, EventRecord, LaneStarted
from turnkeep.store.step_commit import StepCommit

AGENT = AGENTS[0]
HASHES = [AGENT.definition_hash]
#: the attempt cap every start passes
CAP = 3

ACCEPTED = EventType.TURN_ACCEPTED.value
STARTED = EventType.TURN_STARTED.value
MODEL = EventType.MODEL_COMPLETED.value
TOOL = EventType.TOOL_COMPLETED.value
REQUESTED = EventType.INPUT_REQUESTED.value
CANCEL_REQUESTED = EventType.TURN_CANCEL_REQUESTED.value
CANCELLED = EventType.TURN_CANCELLED.value
COMPLETED = EventType.TURN_COMPLETED.value
FAILED = EventType.TURN_FAILED.value


@dataclass
class Backend:
    """One store under test and the session the case writes in: every call is the
    facade's, with the same arguments on either backend."""

    name: str
    store: Any
    tenant: str
    sid: str

    def admit(self, turn_id: str, text: str = "hello") -> None:
        assert self.admission(turn_id, text).created

    def admission(self, turn_id: str, text: str = "hello", **kw: Any) -> Admission:
        """``Store.turns.admit`` of a turn of the demo agent (``kw``: multitask, quotas,
        webhook, or another agent_name, input_hash), as the API calls it."""
        call: dict[str, Any] = {
            "agent_name": AGENT.name,
            "agent_hash": AGENT.definition_hash,
            "input_hash": f"hash-of-{turn_id}",
            "input": {"messages": [{"role": "user", "content": text}]},
            "output_schema": None,
            "budget": None,
            "submitted_by": "tester",
            **kw,
        }
        bounds = Bounds(**{f.name: call.pop(f.name) for f in fields(Bounds) if f.name in call})
        new = NewTurn(tenant_id=self.tenant, session_id=self.sid, turn_id=turn_id, **call)
        admission: Admission = self.store.turns.admit(new, bounds)
        return admission

    def start(self, fence: int, *, claim: bool, hashes: list[str] = HASHES) -> LaneStarted:
        started: LaneStarted = self.store.turns.start(
            self.tenant, self.sid, fence, claim=claim, agent_hashes=hashes, max_attempts=CAP
        )
        return started

    def append(self, turn_id: str, fence: int, revision: int, **kw: Any) -> Appended:
        commit = StepCommit(turn_id=turn_id, revision=revision, **kw)
        appended: Appended = self.store.turns.append(self.tenant, self.sid, fence, commit)
        return appended

    def cancel(self, turn_id: str) -> list[str]:
        events = self.store.turns.request_cancel(self.tenant, self.sid, turn_id, subject="tester")
        return [e.type for e in events]

    def journal(self) -> list[tuple[str, str, int | None, int]]:
        """(turn, type, step, fence) of every event, in seq order from 1."""
        events = self._events()
        assert [e.seq for e in events] == list(range(1, len(events) + 1))
        return [(e.turn_id, e.type, e.step, e.fence) for e in events]

    def _events(self) -> list[EventRecord]:
        events, head = self.store.reads.list_events(self.tenant, self.sid, after=0, limit=1000)
        assert head == len(events)
        return list(events)


def seen(events: tuple[EventRecord, ...]) -> list[tuple[str, str, int | None, int, int]]:
    return [(e.turn_id, e.type, e.step, e.seq, e.fence) for e in events]


ANSWER = {"message": {"role": "assistant", "content": "done"}}
CALL = {"message": {"role": "assistant", "content": "", "tool_calls": [{"id": "c1"}]}}
