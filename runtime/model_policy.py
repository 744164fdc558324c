"""Model policy: which model answers a call, and why, is a recorded decision.

An agent names a primary model (its ``provider`` and ``model``) and an ordered list
of ``Fallback`` models, each with the conditions that permit it:

``outage``   the model before it kept failing after its retries (a transient error
             the retry policy gave up on: 429, 5xx, timeouts, cut connections)
``context``  the request is past the model before it's context ceiling (the provider
             said so, after compaction could not help)

A call tries the primary; only a condition a fallback names moves it to that fallback,
after the model before it gave up — never inside a retry. The choice is a receipt on
the call's ``model.completed`` (``decision``): the model asked for, the model that
answered as the provider reports it, why this one, and what the ones before it failed
with. A reply from a model the policy does not allow (``allows``) fails the turn
closed with ``model_not_allowed``; nothing of it is used.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

#: the conditions a fallback may name
CONDITIONS = frozenset({"outage", "context"})


@dataclass(frozen=True)
class Fallback:
    """A model an agent may fall back to, and when."""

    provider: str
    model: str
    on: tuple[str, ...] = ("outage",)
    model_options: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        bad = set(self.on) - CONDITIONS
        if not self.on or bad:
            raise ValueError(f"fallback {self.model!r}: conditions are {sorted(CONDITIONS)}")

    def describe(self) -> dict[str, Any]:
        return {
            "provider": self.provider,
            "model": self.model,
            "on": sorted(self.on),
            "model_options": self.model_options,
        }


def allows(provider: str, asked: str, reported: str, also: tuple[str, ...] = ()) -> bool:
    """Whether a reply reported as from ``reported`` may answer a call to ``asked``:
    the same model, a dated snapshot of it (``gpt-4o`` → ``gpt-4o-2024-08-06``, never
    ``gpt-4o-mini``), the
    same under the provider's prefix (``demo/weather``), or one the agent lists in
    ``allowed_models``. A reply that names no model is not allowed (fail closed)."""
    name = reported.removeprefix(f"{provider}/")
    if not name:
        return False
    if name == asked or name in also or reported in also:
        return True
    # a snapshot of the model asked for: only a date after it, never another model
    # that merely starts the same (gpt-4o is not gpt-4o-mini)
    return name.startswith(asked + "-") and bool(_SNAPSHOT.fullmatch(name[len(asked) :]))


#: the suffixes providers date their snapshots with: -2024-08-06, -20241022, -0613
_SNAPSHOT = re.compile(r"-(\d{4}-\d{2}-\d{2}|\d{8}|\d{4})")


def receipt(
    *,
    provider: str,
    asked: str,
    answered: str,
    why: str,
    passed_over: list[dict[str, str]],
) -> dict[str, Any]:
    """The decision a ``model.completed`` records."""
    return {
        "asked": {"provider": provider, "model": asked},
        "answered": answered,
        "why": why,
        "passed_over": passed_over,
    }
