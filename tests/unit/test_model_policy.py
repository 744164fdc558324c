"""Which replies a model policy accepts, and what a fallback may name
(runtime/model_policy.py)."""

from __future__ import annotations

import pytest

from turnkeep.runtime.agents.definition import AgentDefinition
from turnkeep.runtime.model_policy import Fallback, allows


@pytest.mark.parametrize(
    ("reported", "ok"),
    [
        ("gpt-4o", True),
        ("gpt-4o-2024-08-06", True),  # a dated snapshot of the model asked for
        ("openai/gpt-4o", True),  # under the provider's prefix
        ("gpt-4o-mini", False),  # another model that merely starts the same
        ("gpt-4o-0613", True),
        ("gpt-4", False),
        ("claude-3-5-sonnet", False),
        ("", False),  # a reply that names no model fails closed
    ],
)
def test_the_reported_model_must_be_the_one_asked_for(reported: str, ok: bool) -> None:
    assert allows("openai", "gpt-4o", reported) is ok


def test_an_agent_may_list_further_models_it_accepts() -> None:
    assert not allows("openai", "m", "router-picked-x")
    assert allows("openai", "m", "router-picked-x", ("router-picked-x",))


def test_fallback_conditions_are_checked_and_pinned() -> None:
    with pytest.raises(ValueError):
        Fallback(provider="openai", model="m", on=("whenever",))
    with pytest.raises(ValueError):
        Fallback(provider="openai", model="m", on=())
    plain = AgentDefinition(name="a", version="1", provider="p", model="m", instructions="i")
    with_fallback = AgentDefinition(
        name="a",
        version="1",
        provider="p",
        model="m",
        instructions="i",
        fallbacks=(Fallback(provider="p", model="n"),),
    )
    assert "fallbacks" not in plain.describe()
    assert with_fallback.definition_hash != plain.definition_hash
