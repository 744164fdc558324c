"""The offline demo model: deterministic, scripted by the agents module.

A script is a function from the model request to a response; the agent names it as
its model id (``provider="demo", model="weather"``). Text is streamed as word deltas
so live SSE shows something, and ``TURNKEEP_DEMO_LATENCY`` (seconds per call) lets
benchmarks stand in for a slow provider without any network.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from turnkeep.runtime.errors import PermanentModelError
from turnkeep.runtime.messages import ModelRequest, ModelResponse, Usage
from turnkeep.runtime.providers.base import DeltaSink, StopCheck
from turnkeep.runtime.providers.registry import register_provider
from turnkeep.runtime.settings import providers_now
from turnkeep.runtime.signals import ModelCallCancelled

Script = Callable[[ModelRequest], ModelResponse]

_scripts: dict[str, Script] = {}
_lock = threading.Lock()


def demo_script(name: str) -> Callable[[Script], Script]:
    """Register a script under a model id: ``@demo_script("weather")``."""

    def wrap(fn: Script) -> Script:
        with _lock:
            _scripts[name] = fn
        return fn

    return wrap


class DemoProvider:
    """Runs a registered script as if it were a streaming provider."""

    name = "demo"

    def __init__(self, latency: float | None = None) -> None:
        # read at each build, as the providers' endpoints are (runtime/providers/registry.py)
        self.latency = providers_now().demo_latency if latency is None else latency

    def complete(
        self,
        request: ModelRequest,
        *,
        on_delta: DeltaSink | None = None,
        should_stop: StopCheck | None = None,
    ) -> ModelResponse:
        script = _scripts.get(request.model)
        if script is None:
            raise PermanentModelError(f"no demo script named {request.model!r}")
        self._wait(should_stop)
        response = script(request)
        if on_delta is not None and response.text:
            for word in response.text.split(" "):
                if should_stop is not None and should_stop():
                    raise ModelCallCancelled("cancelled while streaming")
                on_delta(word + " ")
        chars_in = sum(len(m.content) for m in request.messages) + len(request.instructions)
        return ModelResponse(
            text=response.text,
            tool_calls=response.tool_calls,
            usage=Usage(input_tokens=chars_in // 4 + 1, output_tokens=len(response.text) // 4 + 1),
            model=f"demo/{request.model}",
            stop_reason="tool_use" if response.tool_calls else "end_turn",
        )

    def _wait(self, should_stop: StopCheck | None) -> None:
        # sleep in slices so a cancellation aborts a "slow model" promptly
        end = time.monotonic() + self.latency
        while (left := end - time.monotonic()) > 0:
            if should_stop is not None and should_stop():
                raise ModelCallCancelled("cancelled while waiting for the model")
            time.sleep(min(left, 0.25))


def _demo(model_options: dict[str, Any]) -> DemoProvider:
    return DemoProvider()


# offline and deterministic: nothing transient to retry
register_provider("demo", _demo, retry=False)
