"""The demo agents: what ``make run`` shows, with no network.

``demo`` answers a weather question in three steps: a model call that asks for the
``get_weather`` tool, the tool call, and a model call that writes the answer.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from turnkeep import (
    Agent,
    Effect,
    ModelRequest,
    ModelResponse,
    Role,
    ToolCall,
    ToolContext,
    demo_script,
    tool,
)


@tool(
    name="get_weather",
    version="1",
    description="Today's weather for a city (made up, but always the same for a city).",
    parameters={
        "type": "object",
        "properties": {"city": {"type": "string", "minLength": 1}},
        "required": ["city"],
        "additionalProperties": False,
    },
    effect=Effect.READ,
)
def get_weather(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    digest = hashlib.sha256(args["city"].lower().encode()).digest()
    return {
        "city": args["city"],
        "celsius": digest[0] % 35,
        "sky": ["sunny", "cloudy", "rain"][digest[1] % 3],
    }


def _last_user_text(request: ModelRequest) -> str:
    for m in reversed(request.messages):
        if m.role is Role.USER:
            return m.content
    return ""


@demo_script("weather")
def weather_script(request: ModelRequest) -> ModelResponse:
    """Ask for the weather once, then answer from the tool's result."""
    results = [m for m in request.messages if m.role is Role.TOOL]
    last_user = max((i for i, m in enumerate(request.messages) if m.role is Role.USER), default=-1)
    fresh = [m for m in request.messages[last_user + 1 :] if m.role is Role.TOOL]
    if not fresh:
        words = _last_user_text(request).rstrip("?.! ").split()
        city = words[-1] if words else "Lisbon"
        n = len(results)
        return ModelResponse(
            text="Let me look that up.",
            tool_calls=(
                ToolCall(id=f"call_{n + 1}", name="get_weather", arguments={"city": city}),
            ),
        )
    data = json.loads(fresh[-1].content)
    return ModelResponse(
        text=f"In {data['city']} it is {data['celsius']} degrees and {data['sky']} today."
    )


AGENTS = [
    Agent(
        name="demo",
        version="1",
        provider="demo",
        model="weather",
        instructions="You answer weather questions. Use get_weather, then answer in one line.",
        tools=(get_weather,),
    ),
]
