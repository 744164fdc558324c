"""What the calls made under a declared rate limit need of the adapters: the headers
of every reply (the limits' state as the provider reports it), and a 429 handed up at
once instead of retried on the spot (worker/pace.py waits for the shared pace).

Both are per thread (a context variable), set by ``paced_calls`` around one call, so
the adapters stay free of the pacer and a call made without a declared limit does
exactly what it did before.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar

HeadersSink = Callable[[Mapping[str, str]], None]

#: set while a call is paced: told the headers of each reply
_sink: ContextVar[HeadersSink | None] = ContextVar("turnkeep_rate_headers", default=None)


@contextmanager
def paced_calls(on_headers: HeadersSink) -> Iterator[None]:
    """Calls made in the block (on this thread) report their replies' headers to
    ``on_headers`` and are not retried on a rate-limit refusal."""
    token = _sink.set(on_headers)
    try:
        yield
    finally:
        _sink.reset(token)


def paced() -> bool:
    """Whether the call being made is paced (``RetryingProvider`` then hands a
    ``ProviderRateLimited`` up at once)."""
    return _sink.get() is not None


def heard(headers: Mapping[str, str]) -> None:
    """An adapter got a reply: its headers go to the pace, when the call is paced."""
    sink = _sink.get()
    if sink is not None:
        sink(headers)
