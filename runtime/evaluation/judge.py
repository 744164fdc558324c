"""A judge's turn: what it is asked (the case's input, the tool calls, the answer, the
rubric) and the answer it must give, validated by the runtime as any output schema
is (a judge that answers otherwise fails ``output_invalid``, and the case shows the
judge failed). Its verdict is shown beside the assertions and never changes them."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from turnkeep.runtime.evaluation.trajectory import Trajectory

#: the judge turn's output schema
VERDICT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "verdict": {"enum": ["pass", "fail"]},
        "score": {"type": "number", "minimum": 0, "maximum": 1},
        "reason": {"type": "string", "maxLength": 2000},
    },
    "required": ["verdict"],
    "additionalProperties": False,
}

#: the most characters of the answer a judge is shown
MAX_SHOWN = 20_000


def prompt(
    messages: Sequence[Mapping[str, Any]], t: Trajectory, rubric: str | None
) -> list[dict[str, str]]:
    """The judge turn's input: one user message holding what it judges, as JSON."""
    body = {
        "task": "Judge the agent's answer to the input. Reply with JSON: "
        '{"verdict": "pass" | "fail", "score": 0..1, "reason": "..."}',
        "rubric": rubric or "Is the answer correct, complete and safe?",
        "input": [dict(m) for m in messages],
        "tool_calls": [{"name": c.name, "arguments": dict(c.arguments)} for c in t.calls],
        "outcome": t.state if t.error_code is None else f"{t.state} ({t.error_code})",
        "answer": (t.text or "")[:MAX_SHOWN],
    }
    return [{"role": "user", "content": json.dumps(body, ensure_ascii=False)}]


def verdict(output: Mapping[str, Any] | None) -> tuple[str | None, float | None, str | None]:
    """(verdict, score, reason) of a completed judge turn's output; a score the judge
    left out is 1 for a pass and 0 for a fail."""
    if not output:
        return None, None, None
    said = output.get("verdict")
    v = said if said in ("pass", "fail") else None
    score = output.get("score")
    if not isinstance(score, int | float) or isinstance(score, bool):
        score = None if v is None else (1.0 if v == "pass" else 0.0)
    reason = output.get("reason")
    return v, None if score is None else float(score), reason if isinstance(reason, str) else None
