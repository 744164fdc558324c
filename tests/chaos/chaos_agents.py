"""Agents for chaos scenarios that need more than tests/agents.py offers
(``TURNKEEP_AGENTS=tests.chaos.chaos_agents``): every test agent, plus one served by
a provider that hangs up slowly.

``chaos-slow-stop`` is the offline demo model behind the manners of a streaming HTTP
provider: told to stop mid-call, it first closes its stream and only then raises
``ModelCallCancelled``. Its timings come from the worker's environment, so that one
worker can be slow while another serving the same (hashed, pinned) agent is not:
``TURNKEEP_CHAOS_MODEL_LATENCY`` (seconds per call) and ``TURNKEEP_CHAOS_STOP_DELAY``
(seconds to hang up).
"""

from __future__ import annotations

import dataclasses
import os
import time
from typing import Any

from runtime.definitions import AgentDefinition
from runtime.demo_model import DemoProvider
from runtime.messages import ModelRequest, ModelResponse
from runtime.providers.base import DeltaSink, StopCheck
from runtime.providers.registry import register_provider
from runtime.signals import ModelCallCancelled
from tests.agents import AGENTS as TEST_AGENTS
from tests.agents import count


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

STREAMER = AgentDefinition(
    name="streamer",
    version="1",
    provider="chaos-slow-stop",
    model="count-loop",
    instructions="Count, slowly.",
    tools=(count,),
)

AGENTS = [*TEST_AGENTS, STREAMER]
