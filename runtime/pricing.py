"""What a model call cost, in US dollars, from the model that answered and its usage.

``PRICES`` holds list prices in USD per million tokens, as the providers published
them (table as of 2025-11; check before relying on it, and add your own models with
``register_price``). A model is looked up by the name the provider answered with
(``ModelResponse.model``): exactly, then without a date suffix (``-20250929``,
``-2024-08-06``) or ``-latest``, so a dated snapshot is priced as its family unless
it has an entry of its own. The demo provider's models (``demo/...``) are free. An
unknown model costs ``None``: unknown, never a guessed zero.

Prompt-cache reads and writes are priced apart when the usage reports them (a write
at the five-minute rate: the usage does not say which). A model with a long-context
tier (Claude Sonnet 4 and 4.5 above 200K prompt tokens) is priced at that tier's
rates for the whole call once the prompt is over the threshold, as the provider bills.
Batch, priority and regional rates are not modelled.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from turnkeep.runtime.messages import Usage

PER = 1_000_000.0
#: the responding-model prefix of the offline demo provider (runtime/providers/demo_model.py)
DEMO_PREFIX = "demo/"
_SUFFIX = re.compile(r"-(?:\d{4}-\d{2}-\d{2}|\d{8}|latest)$")


@dataclass(frozen=True)
class Price:
    """USD per million tokens. Cache rates default to the input rate."""

    input: float
    output: float
    cache_read: float | None = None
    cache_write: float | None = None
    #: (prompt tokens above which, the rates then) for a long-context tier
    long_context: tuple[int, Price] | None = None

    def of(self, usage: Usage) -> float:
        if self.long_context is not None and usage.input_tokens > self.long_context[0]:
            return self.long_context[1].of(usage)
        read = min(usage.cache_read_tokens, usage.input_tokens)
        write = min(usage.cache_write_tokens, usage.input_tokens - read)
        plain = usage.input_tokens - read - write
        return (
            plain * self.input
            + read * (self.input if self.cache_read is None else self.cache_read)
            + write * (self.input if self.cache_write is None else self.cache_write)
            + usage.output_tokens * self.output
        ) / PER


def _claude(per_input: float, per_output: float, **kw: Any) -> Price:
    """Anthropic's cache rates: reads at 0.1x input, five-minute writes at 1.25x."""
    return Price(
        per_input, per_output, cache_read=per_input * 0.1, cache_write=per_input * 1.25, **kw
    )


_SONNET_4 = _claude(3.0, 15.0, long_context=(200_000, _claude(6.0, 22.5)))

PRICES: dict[str, Price] = {
    # OpenAI (cached input at its own rate)
    "gpt-5": Price(1.25, 10.0, cache_read=0.125),
    "gpt-5-mini": Price(0.25, 2.0, cache_read=0.025),
    "gpt-5-nano": Price(0.05, 0.40, cache_read=0.005),
    "gpt-4.1": Price(2.0, 8.0, cache_read=0.50),
    "gpt-4.1-mini": Price(0.40, 1.60, cache_read=0.10),
    "gpt-4.1-nano": Price(0.10, 0.40, cache_read=0.025),
    "gpt-4o": Price(2.50, 10.0, cache_read=1.25),
    "gpt-4o-2024-05-13": Price(5.0, 15.0),
    "gpt-4o-mini": Price(0.15, 0.60, cache_read=0.075),
    "o3": Price(2.0, 8.0, cache_read=0.50),
    "o4-mini": Price(1.10, 4.40, cache_read=0.275),
    "o3-mini": Price(1.10, 4.40, cache_read=0.55),
    # Anthropic
    "claude-opus-4-5": _claude(5.0, 25.0),
    "claude-opus-4-1": _claude(15.0, 75.0),
    "claude-opus-4": _claude(15.0, 75.0),
    "claude-opus-4-0": _claude(15.0, 75.0),
    "claude-sonnet-4-5": _SONNET_4,
    "claude-sonnet-4": _SONNET_4,
    "claude-sonnet-4-0": _SONNET_4,
    "claude-3-7-sonnet": _claude(3.0, 15.0),
    "claude-haiku-4-5": _claude(1.0, 5.0),
    "claude-3-5-haiku": _claude(0.80, 4.0),
    "claude-3-haiku": Price(0.25, 1.25, cache_read=0.03, cache_write=0.30),
}
_FREE = Price(0.0, 0.0)
_lock = threading.Lock()


def register_price(model: str, price: Price) -> None:
    """Price ``model`` (a name as the provider answers with it, or its undated
    family) at ``price``; registering a name again replaces it."""
    with _lock:
        PRICES[model] = price


def price(model: str) -> Price | None:
    """The price of ``model`` as named in a response; None when unknown."""
    with _lock:
        found = PRICES.get(model)
    if found is None and model.startswith(DEMO_PREFIX):
        return _FREE  # unless a price was registered for it (tests price one)
    with _lock:
        found = found or PRICES.get(model)
        if found is None and model:
            found = PRICES.get(_SUFFIX.sub("", model))
    return found


def cost(model: str, usage: Usage | Mapping[str, Any]) -> float | None:
    """USD for one call of ``model`` (the responding model) with ``usage`` (a
    ``Usage`` or its persisted JSON form); None for a model without a price."""
    found = price(model)
    if found is None:
        return None
    return found.of(usage if isinstance(usage, Usage) else Usage.from_json(usage))
