"""A tool call's recorded steps (``ToolContext.step``, worker/tool_steps.py; the
statements of sql/tool_steps.sql; docs/tool-steps.md)."""

from __future__ import annotations

import json
from typing import Any

from turnkeep.store.errors import NotFound
from turnkeep.store.records import ToolStepRecord
from turnkeep.store.statements import Statements


class ToolSteps(Statements):
    """The steps of a tool call, first writer wins. Not fenced: a rerun of the call
    reads what an earlier run recorded."""

    def get_tool_step(
        self, tenant_id: str, session_id: str, turn_id: str, step: int, name: str
    ) -> ToolStepRecord | None:
        """The step ``name`` of the tool call at ``step``, if recorded."""
        row = self._one(
            "get_tool_step",
            {
                "tenant_id": tenant_id,
                "session_id": session_id,
                "turn_id": turn_id,
                "step": step,
                "name": name,
            },
        )
        return None if row is None else ToolStepRecord(**row)

    def record_tool_step(
        self, tenant_id: str, session_id: str, turn_id: str, step: int, name: str, result: Any
    ) -> tuple[ToolStepRecord, bool]:
        """Record ``result`` (JSON) as the step ``name`` of the tool call at ``step``
        unless one is recorded already (first writer wins): the recorded step, and
        whether this call wrote it. Not fenced (see ``record_tool_step``)."""
        params = {
            "tenant_id": tenant_id,
            "session_id": session_id,
            "turn_id": turn_id,
            "step": step,
            "name": name,
            "result": json.dumps(result, separators=(",", ":")),
        }
        row = self._one("record_tool_step", params)
        if row is not None:
            return ToolStepRecord(**row), True
        winner = self.get_tool_step(tenant_id, session_id, turn_id, step, name)
        if winner is None:  # rows are never deleted while their call can run
            raise NotFound(f"tool step {name!r} lost its insert and is not there")
        return winner, False
