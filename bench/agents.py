"""The bench's agents module (``TURNKEEP_AGENTS=bench.agents``): ``ksteps`` calls a
no-op tool N times, N read from the user's text ("steps N"), then answers, so a turn
has 2N + 1 durable steps (N model calls asking for the tool, N tool calls, one
answer)."""

from __future__ import annotations

from typing import Any

from runtime.agents.definition import AgentDefinition
from runtime.agents.tools import Effect, ToolContext, tool
from runtime.messages import ModelRequest, ModelResponse, Role, ToolCall
from runtime.providers.demo_model import demo_script


@tool(
    name="noop",
    version="1",
    description="Does nothing.",
    parameters={"type": "object", "properties": {}, "additionalProperties": False},
    effect=Effect.READ,
)
def noop(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    return {}


@demo_script("ksteps")
def ksteps_script(request: ModelRequest) -> ModelResponse:
    last_user = max(i for i, m in enumerate(request.messages) if m.role is Role.USER)
    n = int(request.messages[last_user].content.split()[-1])
    done = sum(1 for m in request.messages[last_user + 1 :] if m.role is Role.TOOL)
    if done < n:
        call = ToolCall(id=f"call_{done + 1}", name="noop", arguments={})
        return ModelResponse(text="", tool_calls=(call,))
    return ModelResponse(text="done")


AGENTS = [
    AgentDefinition(
        name="ksteps",
        version="1",
        provider="demo",
        model="ksteps",
        instructions="Call noop as told, then answer.",
        tools=(noop,),
    ),
]
