"""Bounds of a turn: the agent's limits, lowered by the turn's own budget.

Counted from the committed journal, so retries and recoveries count too.
"""

from __future__ import annotations

from typing import Any

from runtime.definitions import Limits
from runtime.errors import BudgetExceeded
from runtime.plan import Progress


def effective_limits(agent: Limits, budget: dict[str, Any] | None) -> Limits:
    if not budget:
        return agent

    def low(name: str, cur: Any) -> Any:
        value = budget.get(name)
        return cur if value is None else min(cur, value)

    return Limits(
        max_iterations=low("max_iterations", agent.max_iterations),
        max_model_calls=low("max_model_calls", agent.max_model_calls),
        max_tool_calls=low("max_tool_calls", agent.max_tool_calls),
        max_tokens=low("max_tokens", agent.max_tokens),
        max_seconds=low("max_seconds", agent.max_seconds),
    )


def check_model_call(limits: Limits, done: Progress, elapsed: float) -> None:
    """Raise BudgetExceeded if one more model call would pass a bound."""
    _check_time(limits, elapsed)
    if done.model_calls >= min(limits.max_model_calls, limits.max_iterations):
        raise BudgetExceeded(f"model call limit {limits.max_model_calls} reached")
    if done.tokens >= limits.max_tokens:
        raise BudgetExceeded(f"token limit {limits.max_tokens} reached")


def check_tool_call(limits: Limits, done: Progress, elapsed: float) -> None:
    """Raise BudgetExceeded if one more tool call would pass a bound."""
    _check_time(limits, elapsed)
    if done.tool_calls >= limits.max_tool_calls:
        raise BudgetExceeded(f"tool call limit {limits.max_tool_calls} reached")


def _check_time(limits: Limits, elapsed: float) -> None:
    if elapsed >= limits.max_seconds:
        raise BudgetExceeded(f"wall-clock limit {limits.max_seconds}s reached")
