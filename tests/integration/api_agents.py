"""A small agents module for the API's integration tests (TURNKEEP_AGENTS).

The API only needs names, definition hashes and output schemas: no tool runs here.
"""

from __future__ import annotations

from runtime.agents.definition import AgentDefinition

AGENTS = [
    AgentDefinition(
        name="demo",
        version="1",
        provider="demo",
        model="demo-weather",
        instructions="Answer questions about the weather in one sentence.",
    ),
    AgentDefinition(
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
