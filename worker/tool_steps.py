"""The Postgres ``StepLog`` of one tool call: where ``ToolContext.step`` records what
the call's steps returned, keyed by the call's idempotency key (tenant, session,
turn, step) and the step name (store/sql/tool_steps.sql ``get_tool_step``,
``record_tool_step``; docs/tool-steps.md).

The record is not fenced. A step's result is the result of an effect already done;
a worker that lost its lease did that effect all the same, and refusing its record
would only make the next runner do it again. The fence guards the journal (what the
turn did, and the tool call's outcome), and that worker's journal writes stay
refused. First writer wins, so two runs of one call, the stale one included, agree
on one result for each step.

The store is looked up on first use, not when the log is made: a tool that takes no
step never touches it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from turnkeep.runtime.obs.faults import FaultPoint, hit
from turnkeep.store.records import ToolStepRecord


class ToolStepStore(Protocol):
    """What the step log needs of the store: its ``tool_steps`` part
    (``turnkeep.store.tool_steps.ToolSteps``)."""

    def get_tool_step(
        self, tenant_id: str, session_id: str, turn_id: str, step: int, name: str
    ) -> ToolStepRecord | None: ...

    def record_tool_step(
        self, tenant_id: str, session_id: str, turn_id: str, step: int, name: str, result: Any
    ) -> tuple[ToolStepRecord, bool]: ...


class StoreStepLog:
    """The steps of the tool call at ``step`` of a turn, in the ``tool_steps`` table."""

    def __init__(
        self,
        store: Callable[[], ToolStepStore],
        *,
        tenant_id: str,
        session_id: str,
        turn_id: str,
        step: int,
    ) -> None:
        self._store = store
        self._key = (tenant_id, session_id, turn_id, step)

    def recorded(self, name: str) -> tuple[Any] | None:
        found = self._store().get_tool_step(*self._key, name)
        return None if found is None else (found.result,)

    def record(self, name: str, result: Any) -> Any:
        store = self._store()
        hit(FaultPoint.BEFORE_TOOL_STEP_RECORD)
        recorded, _ = store.record_tool_step(*self._key, name, result)
        hit(FaultPoint.AFTER_TOOL_STEP_RECORD)
        return recorded.result
