"""Agents for chaos scenarios that need more than tests/agents.py offers
(``TURNKEEP_AGENTS=tests.chaos.chaos_agents``): every test agent, plus one served by
a provider that hangs up slowly.

``chaos-slow-stop`` is the offline demo model behind the manners of a streaming HTTP
provider: told to stop mid-call, it first closes its stream and only then raises
``ModelCallCancelled``. Its timings come from the worker's environment, so that one
worker can be slow while another serving the same (hashed, pinned) agent is not:
``TURNKEEP_CHAOS_MODEL_LATENCY`` (seconds per call) and ``TURNKEEP_CHAOS_STOP_DELAY``
(seconds to hang up).

``ledger`` (the randomised soak, tests/chaos/test_randomised.py): ``steps=N`` tool
calls, one at a time, alternating the idempotent ``count`` and the effectful
``charge`` (policy ``interrupt``), so a turn has effects of both kinds to count.
"""

from __future__ import annotations

import dataclasses
import os
import time
from typing import Any

from tests.agents import AGENTS as TEST_AGENTS
from tests.agents import _steps_wanted, _this_turn, charge, count
from turnkeep import (
    Agent,
    DeltaSink,
    DemoProvider,
    ModelCallCancelled,
    ModelRequest,
    ModelResponse,
    Role,
    StopCheck,
    ToolCall,
    demo_script,
    register_provider,
)


class SlowStopProvider:
    name = "chaos-slow-stop"

    def __init__(self, latency: float, stop_delay: float) -> None:
        self.inner = DemoProvider(latency)
        self.stop_delay = stop_delay

    def complete(
        self,
        request: ModelRequest,
        *,
        on_delta: DeltaSink | None = None,
        should_stop: StopCheck | None = None,
    ) -> ModelResponse:
        try:
            reply = self.inner.complete(request, on_delta=on_delta, should_stop=should_stop)
            # it answers as itself, as a provider reports its own models (model policy)
            return dataclasses.replace(reply, model=f"{self.name}/{request.model}")
        except ModelCallCancelled:
            time.sleep(self.stop_delay)  # closing the stream takes a while
            raise


def _slow_stop(options: dict[str, Any]) -> SlowStopProvider:
    return SlowStopProvider(
        float(os.environ.get("TURNKEEP_CHAOS_MODEL_LATENCY", "0")),
        float(os.environ.get("TURNKEEP_CHAOS_STOP_DELAY", "0")),
    )


register_provider("chaos-slow-stop", _slow_stop, retry=False)

STREAMER = Agent(
    name="streamer",
    version="1",
    provider="chaos-slow-stop",
    model="count-loop",
    instructions="Count, slowly.",
    tools=(count,),
)


@demo_script("ledger")
def ledger(request: ModelRequest) -> ModelResponse:
    """Call ``count`` (odd calls) and ``charge`` (even ones) until ``steps=N`` results
    are in; an interrupted charge's error result counts as one. A long session may be
    compacted: a summary request (no tools offered) gets a summary."""
    if not request.tools:
        return ModelResponse(text="a summary")
    done = sum(1 for m in _this_turn(request) if m.role is Role.TOOL)
    if done >= _steps_wanted(request):
        return ModelResponse(text=f"done after {done} calls")
    name, args = ("count", {"label": "x"}) if done % 2 == 0 else ("charge", {"amount": 5})
    call = ToolCall(id=f"call_{done + 1}", name=name, arguments=args)
    return ModelResponse(text=f"calling {name} #{done + 1}", tool_calls=(call,))


LEDGER = Agent(
    name="ledger",
    version="1",
    provider="demo",
    model="ledger",
    instructions="Count and charge.",
    tools=(count, charge),
)

AGENTS = [*TEST_AGENTS, STREAMER, LEDGER]
