"""Assertions derived from a real turn's trajectory ("add this turn as a case"): what
it did becomes what a later version must do.

- ``trajectory``: its outcome (state and error code); its tool calls in order
  (``tool_order`` for two or more, ``tool_called`` for one), and no more tool calls
  than it made (``at_most``);
- ``output``: a completed turn's output, to equal (its parsed output when it had an
  output schema, else its text).
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Literal

from turnkeep.assertions import (
    Assertion,
    AtMost,
    Outcome,
    OutputEquals,
    ToolCalled,
    ToolOrder,
)
from turnkeep.runtime.evaluation.trajectory import Trajectory

Derivable = Literal["trajectory", "output"]


def derive(t: Trajectory, kinds: Collection[Derivable]) -> list[Assertion]:
    out: list[Assertion] = []
    if "trajectory" in kinds:
        if t.state in ("completed", "failed", "cancelled"):
            state: Literal["completed", "failed", "cancelled"] = t.state  # type: ignore[assignment]
            out.append(Outcome(state=state, code=t.error_code))
        names = [c.name for c in t.calls]
        if len(names) >= 2:
            out.append(ToolOrder(tools=names[:50]))
        elif names:
            out.append(ToolCalled(tool=names[0]))
        out.append(AtMost(of="tool_calls", max=float(len(names))))
    if "output" in kinds and t.state == "completed":
        out.append(OutputEquals(value=t.output if t.has_output else t.text))
    return out
