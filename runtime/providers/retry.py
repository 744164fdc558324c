"""Retrying transient model failures, as the design's "Model errors" section says.

Whoever makes a call may hear of its retries (``observe_retries``): the worker records
them in the step's event and counts them per agent (``turnkeep_model_retries_total``),
and this module stays free of either.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from turnkeep.runtime.errors import ProviderRateLimited, TransientModelError
from turnkeep.runtime.messages import ModelRequest, ModelResponse
from turnkeep.runtime.providers import paced_calls
from turnkeep.runtime.providers.base import DeltaSink, Provider, StopCheck
from turnkeep.runtime.signals import ModelCallCancelled

log = logging.getLogger(__name__)

#: while a cancellable call backs off, it looks at its stop check this often
_STOP_POLL = 0.25

#: told of each retry the calls of this context (thread) make (``observe_retries``)
_on_retry: ContextVar[Callable[[], None] | None] = ContextVar("turnkeep_on_retry", default=None)


@contextmanager
def observe_retries(on_retry: Callable[[], None]) -> Iterator[None]:
    """Call ``on_retry()`` once for every retry of a model call made in the block (on
    this thread), just before the call is made again."""
    token = _on_retry.set(on_retry)
    try:
        yield
    finally:
        _on_retry.reset(token)


class RetryingProvider:
    """Wraps a provider so a ``TransientModelError`` is retried ``attempts`` times
    (``attempts + 1`` calls in all); every other error passes straight through.

    The n-th retry waits ``base_delay * 2**(n-1)`` (capped at ``max_delay``) with
    +/-20% jitter, or the provider's ``retry_after`` when that is longer. A
    ``retry_after`` beyond ``max_delay`` ends the retries at once: calling sooner
    than asked only earns another refusal, and sleeping that long would pin a worker
    thread. Live deltas of a failed attempt have already gone out; they are
    speculative, so consumers must expect a retried call to stream from the start.
    A call under a declared rate limit (``paced_calls.paced``) hands a rate-limit refusal
    up at once: the shared pace decides when it goes again (worker/pace.py).
    """

    def __init__(
        self,
        inner: Provider,
        *,
        attempts: int = 3,
        base_delay: float = 2.0,
        max_delay: float = 60.0,
        sleep: Callable[[float], None] = time.sleep,
        rng: Callable[[], float] = random.random,
    ) -> None:
        if attempts < 0 or base_delay < 0 or max_delay < 0:
            raise ValueError("attempts and delays must not be negative")
        self.inner = inner
        self.name: str = inner.name
        self.attempts = attempts
        self.base_delay = base_delay
        self.max_delay = max_delay
        self._sleep = sleep
        self._rng = rng

    def __repr__(self) -> str:
        return f"RetryingProvider({self.inner!r}, attempts={self.attempts})"

    def delay_for(self, retry: int, retry_after: float | None) -> float:
        """Seconds to wait before retry number ``retry`` (1-based)."""
        backoff = min(self.max_delay, self.base_delay * 2.0 ** (retry - 1))
        # Jitter spreads out the workers that all hit the same 429 at once.
        backoff = min(self.max_delay, backoff * (0.8 + 0.4 * self._rng()))
        if retry_after is not None and retry_after > backoff:
            return retry_after
        return backoff

    def complete(
        self,
        request: ModelRequest,
        *,
        on_delta: DeltaSink | None = None,
        should_stop: StopCheck | None = None,
    ) -> ModelResponse:
        retry = 0
        while True:
            try:
                return self.inner.complete(request, on_delta=on_delta, should_stop=should_stop)
            except TransientModelError as exc:
                if isinstance(exc, ProviderRateLimited) and paced_calls.paced():
                    raise
                retry += 1
                if retry > self.attempts:
                    raise
                delay = self.delay_for(retry, exc.retry_after)
                if delay > self.max_delay:
                    log.warning(
                        "%s: Retry-After %.1fs exceeds %.1fs; not retrying: %s",
                        self.name,
                        delay,
                        self.max_delay,
                        exc,
                    )
                    raise
                log.warning(
                    "%s: transient failure, retry %d/%d in %.2fs: %s",
                    self.name,
                    retry,
                    self.attempts,
                    delay,
                    exc,
                )
                self._wait(delay, should_stop)
                observer = _on_retry.get()
                if observer is not None:
                    observer()

    def _wait(self, delay: float, should_stop: StopCheck | None) -> None:
        if should_stop is None:
            self._sleep(delay)
            return
        # Sleep in slices so a cancellation does not wait out a long backoff.
        remaining = delay
        while True:
            if should_stop():
                raise ModelCallCancelled("model call aborted during retry backoff")
            if remaining <= 1e-9:  # float residue of the subtraction below
                return
            step = min(_STOP_POLL, remaining)
            self._sleep(step)
            remaining -= step
