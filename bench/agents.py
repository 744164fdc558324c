"""The bench's agents module (``TURNKEEP_AGENTS=bench.agents``): ``ksteps`` calls a
no-op tool N times, N read from the user's text ("steps N"), then answers, so a turn
has 2N + 1 durable steps (N model calls asking for the tool, N tool calls, one
answer). ``fanout`` asks for ``FANOUT`` calls of a ``PAUSE`` s read in one answer,
then answers: 1 + FANOUT + 1 steps (bench/scenarios/parallel.py); ``fanout-seq`` the
same, one call at a time."""

from __future__ import annotations

import time
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


#: calls of ``fanout``'s one answer, and the seconds each takes
FANOUT, PAUSE = 4, 0.5


@tool(
    name="wait",
    version="1",
    description="Waits PAUSE seconds.",
    parameters={"type": "object", "properties": {"i": {"type": "integer"}}},
    effect=Effect.READ,
)
def wait(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    time.sleep(PAUSE)
    return {"i": args.get("i")}


@demo_script("fanout")
def fanout_script(request: ModelRequest) -> ModelResponse:
    last_user = max(i for i, m in enumerate(request.messages) if m.role is Role.USER)
    if any(m.role is Role.TOOL for m in request.messages[last_user + 1 :]):
        return ModelResponse(text="done")
    calls = tuple(ToolCall(id=f"call_{i}", name="wait", arguments={"i": i}) for i in range(FANOUT))
    return ModelResponse(text="", tool_calls=calls)


AGENTS = [
    Agent(
        name="fanout",
        version="1",
        provider="demo",
        model="fanout",
        instructions="Wait four times at once, then answer.",
        tools=(wait,),
    ),
    Agent(
        name="fanout-seq",
        version="1",
        provider="demo",
        model="fanout",
        instructions="Wait four times, one after another, then answer.",
        max_parallel_tools=1,
        tools=(wait,),
    ),
    Agent(
        name="ksteps",
        version="1",
        provider="demo",
        model="ksteps",
        instructions="Call noop as told, then answer.",
        tools=(noop,),
    ),
]
