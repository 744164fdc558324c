"""A small agents module for the API's integration tests (TURNKEEP_AGENTS).

The API only needs names, definition hashes and output schemas: no tool runs here.
"""

from __future__ import annotations

from turnkeep import Agent, PromotionPolicy

AGENTS = [
    Agent(
        name="demo",
        version="1",
        provider="demo",
        model="demo-weather",
        instructions="Answer questions about the weather in one sentence.",
    ),
    Agent(
        name="other",
        version="1",
        provider="demo",
        model="demo-echo",
        instructions="Echo the question back.",
        output_schema={
            "type": "object",
            "properties": {"answer": {"type": "string"}},
            "required": ["answer"],
        },
    ),
]


def _gated(version: str) -> Agent:
    return Agent(
        name="gated",
        version=version,
        provider="demo",
        model="demo-echo",
        instructions=f"Echo the question back (v{version}).",
    )


AGENTS += [_gated("1"), _gated("2")]

#: gated's default changes only through promote; its policy names no dataset, so a
#: promotion passes (tests/integration/test_openapi.py aims promote at it)
PROMOTIONS = [PromotionPolicy(agent="gated")]
