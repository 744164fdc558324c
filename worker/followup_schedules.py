"""The Postgres ``FollowUps`` of one tool call: ``ToolContext.schedule_turn`` makes a
one-shot schedule (store/schedules.py ``create_schedule``) of a turn of the call's
session, its origin the call's turn and step, its creator the turn's submitter (who
reads the follow-up and answers its waits, as a schedule's creator does). The beat's
schedules pass admits it at its time (recovery/schedules.py); until then it holds no
worker and no lease, and a DELETE of the schedule cancels it.

The schedule is not fenced, like a tool step's record: a worker that lost its lease
made it all the same, and its id is the call's, so the next run of the call finds it
(first writer wins: its time and input stand). The store and the registry are looked
up on first use: a tool that schedules nothing touches neither.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, Protocol

from turnkeep.runtime.agents.registry import AgentRegistry
from turnkeep.runtime.followups import FollowUp
from turnkeep.runtime.hashing import sha256_hex
from turnkeep.store.errors import IdempotencyConflict
from turnkeep.store.schedules import ScheduleRecord


class FollowUpStore(Protocol):
    """What follow-ups need of the store: its ``schedules`` part
    (``turnkeep.store.schedules.Schedules``)."""

    def create_schedule(self, **spec: Any) -> tuple[ScheduleRecord, bool]: ...

    def get_schedule(self, tenant_id: str, schedule_id: str) -> ScheduleRecord: ...


class StoreFollowUps:
    """The follow-ups of the tool call at ``step`` of a turn."""

    def __init__(
        self,
        store: Callable[[], FollowUpStore],
        agents: Callable[[], AgentRegistry],
        *,
        tenant_id: str,
        session_id: str,
        turn_id: str,
        step: int,
        agent: str,
        submitted_by: str,
    ) -> None:
        self._store, self._agents = store, agents
        self.tenant_id, self.session_id = tenant_id, session_id
        self.origin = {"session_id": session_id, "turn_id": turn_id, "step": step}
        self.agent, self.submitted_by = agent, submitted_by

    def schedule(
        self, schedule_id: str, at: datetime, messages: list[dict[str, str]], agent: str | None
    ) -> FollowUp:
        name = self.agent if agent is None else self._agents().get(agent).name  # UnknownAgent
        spec = {
            "agent": name,
            "at": at.isoformat(),
            "messages": messages,
            "session_id": self.session_id,
            "origin": self.origin,
        }
        store = self._store()
        try:
            made, _ = store.create_schedule(
                tenant_id=self.tenant_id,
                schedule_id=schedule_id,
                agent_name=name,
                cron=None,
                every_seconds=None,
                timezone="UTC",
                input={"messages": messages},
                session_id=self.session_id,
                missed="run_once",
                next_at=at,
                spec_hash=sha256_hex(spec),
                created_by=self.submitted_by,
                created_at=datetime.now(UTC),
                origin=self.origin,
            )
        except IdempotencyConflict:
            # an earlier run of this call made it, asking another time: its stands
            made = store.get_schedule(self.tenant_id, schedule_id)
        at_made = made.when.at
        assert at_made is not None  # a one-shot's time
        return FollowUp(made.schedule_id, at_made)
