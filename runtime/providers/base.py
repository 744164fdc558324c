"""The provider protocol the agent loop calls.

Calls are synchronous: a worker runs many turns on threads, one call per thread.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from turnkeep.runtime.messages import ModelRequest, ModelResponse

#: receives each live text delta of a streaming call; never persisted
DeltaSink = Callable[[str], None]
#: answers True when the call should be aborted (the turn is being cancelled)
StopCheck = Callable[[], bool]


class Provider(Protocol):
    """One model provider. ``complete`` raises only ``ModelError`` subclasses (runtime.errors)."""

    name: str

    def complete(
        self,
        request: ModelRequest,
        *,
        on_delta: DeltaSink | None = None,
        should_stop: StopCheck | None = None,
    ) -> ModelResponse: ...
