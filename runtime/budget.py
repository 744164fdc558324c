"""Bounds of a turn: the agent's ``Limits``, lowered by the turn's own budget.

Counted from the committed journal, so retries and recoveries count too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from turnkeep.runtime.errors import BudgetExceeded
from turnkeep.runtime.plan import Progress


@dataclass(frozen=True)
class Limits:
    """Per-turn bounds of an agent; a turn's budget may only lower them."""

    max_iterations: int = 20
    max_model_calls: int = 20
    max_tool_calls: int = 50
    max_tokens: int = 200_000
    max_seconds: float = 3600.0
    #: USD a turn's model calls may cost (runtime/pricing.py), a call a crash cut
    #: short charged again when it is re-issued; None: no bound
    max_cost_usd: float | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "max_iterations": self.max_iterations,
            "max_model_calls": self.max_model_calls,
            "max_tool_calls": self.max_tool_calls,
            "max_tokens": self.max_tokens,
            "max_seconds": self.max_seconds,
            # only when set: the hashes of agents without one stay as they were
            **({} if self.max_cost_usd is None else {"max_cost_usd": self.max_cost_usd}),
        }


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
        max_cost_usd=(
            budget.get("max_cost_usd")
            if agent.max_cost_usd is None
            else low("max_cost_usd", agent.max_cost_usd)
        ),
    )


_FIELDS = ("max_iterations", "max_model_calls", "max_tool_calls", "max_tokens", "max_seconds")


def extended(limits: Limits, grants: list[dict[str, Any]]) -> Limits:
    """``limits`` grown by every approved budget extension (each ``extend`` object)."""
    values = limits.to_json()
    for grant in grants:
        for name in _FIELDS:
            more = grant.get(name)
            if more is not None:
                values[name] = values[name] + more
    return Limits(**values)


def default_grant(exc: BudgetExceeded) -> dict[str, Any]:
    """An approval that names no amounts doubles the bound it reached."""
    if exc.bound == "max_model_calls":
        # the model-call check also stops at max_iterations
        return {"max_model_calls": exc.limit, "max_iterations": exc.limit}
    return {exc.bound: exc.limit} if exc.bound in _FIELDS else {}


def check_model_call(limits: Limits, done: Progress, elapsed: float) -> None:
    """Raise BudgetExceeded if one more model call would pass a bound."""
    _check_time(limits, elapsed)
    if done.model_calls >= min(limits.max_model_calls, limits.max_iterations):
        bound = min(limits.max_model_calls, limits.max_iterations)
        raise BudgetExceeded(
            f"model call limit {bound} reached", bound="max_model_calls", limit=bound
        )
    if done.tokens >= limits.max_tokens:
        raise BudgetExceeded(
            f"token limit {limits.max_tokens} reached", bound="max_tokens", limit=limits.max_tokens
        )
    if limits.max_cost_usd is not None and done.cost_usd >= limits.max_cost_usd:
        raise BudgetExceeded(
            f"cost limit ${limits.max_cost_usd:g} reached (${done.cost_usd:.6f} charged)",
            bound="max_cost_usd",
            limit=limits.max_cost_usd,
        )


def check_tool_call(limits: Limits, done: Progress, elapsed: float) -> None:
    """Raise BudgetExceeded if one more tool call would pass a bound."""
    _check_time(limits, elapsed)
    if done.tool_calls >= limits.max_tool_calls:
        raise BudgetExceeded(
            f"tool call limit {limits.max_tool_calls} reached",
            bound="max_tool_calls",
            limit=limits.max_tool_calls,
        )


def _check_time(limits: Limits, elapsed: float) -> None:
    if elapsed >= limits.max_seconds:
        raise BudgetExceeded(
            f"wall-clock limit {limits.max_seconds}s reached",
            bound="max_seconds",
            limit=limits.max_seconds,
        )
