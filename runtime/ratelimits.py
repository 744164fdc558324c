"""Provider rate limits: what an operator declares, which of them a model call counts
against, what it costs, and what a provider's reply says about them. Pure: the
shared buckets are in Redis (store/pacer.py), the worker's side is worker/pace.py,
the whole story is docs/flow-control.md ("Provider rate limits").

``TURNKEEP_RATE_LIMITS`` is a JSON list, one object per limit::

    [{"provider": "openai", "model": "gpt-4o-mini",
      "requests_per_minute": 500, "tokens_per_minute": 200000}]

``provider`` is an agent's provider name; ``model`` a model id, or ``"*"`` (the
default) for every model of the provider; at least one of ``requests_per_minute``
and ``tokens_per_minute``; ``burst_seconds`` (default 0) how far ahead of the steady
pace calls may run; ``name`` (default ``provider/model``) what users see. A call
counts against every limit of its provider that names its model or ``*``. A bucket
is shared by every worker whose calls go to the same endpoint with the same key
(``bucket_id``): the key itself is never in a Redis key, a log line or a message.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any

from turnkeep.runtime.hashing import sha256_hex
from turnkeep.runtime.messages import ModelRequest

#: the keys a limit's object may hold
_KEYS = frozenset(
    {"name", "provider", "model", "requests_per_minute", "tokens_per_minute", "burst_seconds"}
)
#: a name users see (the turn's ``paced.limit``, a metric label)
_NAME = re.compile(r"^[A-Za-z0-9._/*:@+-]{1,128}$")
ANY_MODEL = "*"


@dataclass(frozen=True)
class RateLimit:
    """One declared limit."""

    name: str
    provider: str
    model: str = ANY_MODEL
    requests_per_minute: float | None = None
    tokens_per_minute: float | None = None
    burst_seconds: float = 0.0

    @property
    def request_interval_ms(self) -> float:
        """Milliseconds one request adds to its bucket (0: no request limit)."""
        return 0.0 if not self.requests_per_minute else 60_000.0 / self.requests_per_minute

    @property
    def token_interval_ms(self) -> float:
        """Milliseconds one token adds to its bucket (0: no token limit)."""
        return 0.0 if not self.tokens_per_minute else 60_000.0 / self.tokens_per_minute


def parse(raw: str) -> tuple[RateLimit, ...]:
    """``TURNKEEP_RATE_LIMITS``; ValueError naming what is wrong (never echoing it)."""
    if not raw.strip():
        return ()
    try:
        given = json.loads(raw)
    except ValueError:
        raise ValueError("TURNKEEP_RATE_LIMITS is not JSON") from None
    if not isinstance(given, list):
        raise ValueError("TURNKEEP_RATE_LIMITS must be a JSON list of objects")
    limits = [_limit(i, item) for i, item in enumerate(given)]
    seen: set[tuple[str, str]] = set()
    names: set[str] = set()
    for lim in limits:
        if (lim.provider, lim.model) in seen:
            raise ValueError(f"TURNKEEP_RATE_LIMITS: {lim.provider}/{lim.model} is declared twice")
        if lim.name in names:
            raise ValueError(f"TURNKEEP_RATE_LIMITS: the name {lim.name!r} is used twice")
        seen.add((lim.provider, lim.model))
        names.add(lim.name)
    return tuple(limits)


def _limit(i: int, item: Any) -> RateLimit:
    where = f"TURNKEEP_RATE_LIMITS[{i}]"
    if not isinstance(item, dict):
        raise ValueError(f"{where} is not an object")
    unknown = sorted(set(item) - _KEYS)
    if unknown:
        raise ValueError(f"{where}: unknown key {unknown[0][:40]!r}")
    provider, model = item.get("provider"), item.get("model", ANY_MODEL)
    if not isinstance(provider, str) or not provider:
        raise ValueError(f"{where}: provider (a provider name) is required")
    if not isinstance(model, str) or not model:
        raise ValueError(f"{where}: model must be a model id or '*'")
    rates = {}
    for key in ("requests_per_minute", "tokens_per_minute", "burst_seconds"):
        value = item.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
            raise ValueError(f"{where}: {key} must be a number >= 0")
        if key != "burst_seconds" and value == 0:
            raise ValueError(f"{where}: {key} must be above 0")
        rates[key] = float(value)
    if "requests_per_minute" not in rates and "tokens_per_minute" not in rates:
        raise ValueError(f"{where}: requests_per_minute or tokens_per_minute is required")
    name = item.get("name", f"{provider}/{model}")
    if not isinstance(name, str) or not _NAME.match(name):
        raise ValueError(f"{where}: name must match {_NAME.pattern}")
    return RateLimit(name=name, provider=provider, model=model, **rates)


@lru_cache(maxsize=8)
def table(raw: str) -> tuple[RateLimit, ...]:
    """The declared limits of a settings value, parsed once per process."""
    return parse(raw)


@lru_cache(maxsize=256)
def _applicable(raw: str, provider: str, model: str) -> tuple[RateLimit, ...]:
    return tuple(
        lim for lim in table(raw) if lim.provider == provider and lim.model in (model, ANY_MODEL)
    )


def applicable(raw: str, provider: str, model: str) -> tuple[RateLimit, ...]:
    """The limits a call to ``provider``/``model`` counts against (none declared: an
    empty tuple, found without parsing anything)."""
    if not raw:
        return ()
    return _applicable(raw, provider, model)


def bucket_id(limit: RateLimit, endpoint: str) -> str:
    """The Redis bucket of ``limit`` for calls to ``endpoint`` (the provider's base URL
    and a digest of its key: runtime/providers/registry.py ``endpoint_id``)."""
    return sha256_hex(f"{limit.provider}\n{limit.model}\n{endpoint}")[:24]


def reserved_tokens(request: ModelRequest, estimate: int, fallback_output: int) -> int:
    """What a call is charged against a token limit before it is made: the request's
    estimate (runtime/window.py) and the output it may produce (the cap it asks for,
    else the agent's ``reserve_output``); corrected by the usage it reports."""
    cap: Any = request.max_output_tokens
    for key in ("max_completion_tokens", "max_tokens", "max_output_tokens"):
        if cap is None:
            cap = request.options.get(key)
    if isinstance(cap, bool) or not isinstance(cap, int) or cap <= 0:
        cap = fallback_output
    return estimate + int(cap)


# -- what a provider reports -----------------------------------------------------------

#: (remaining, reset) header pairs: OpenAI's (reset as a duration, "6m0s", "20ms") and
#: Anthropic's (reset as an RFC 3339 time)
_OPENAI = (
    ("x-ratelimit-remaining-requests", "x-ratelimit-reset-requests"),
    ("x-ratelimit-remaining-tokens", "x-ratelimit-reset-tokens"),
)
_ANTHROPIC = tuple(
    (f"anthropic-ratelimit-{kind}-remaining", f"anthropic-ratelimit-{kind}-reset")
    for kind in ("requests", "tokens", "input-tokens", "output-tokens")
)
_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h)")
_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
#: never believe a provider asks for more than this in one reply
MAX_BLOCK_SECONDS = 600.0


def _duration(value: str) -> float | None:
    parts = _DURATION.findall(value.strip())
    if not parts or "".join(n + u for n, u in parts) != value.strip():
        return None
    return sum(float(n) * _UNITS[u] for n, u in parts)


def _until(value: str, now: datetime) -> float | None:
    try:
        when = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return (when - now).total_seconds()


def exhausted_for(headers: Mapping[str, str], now: datetime | None = None) -> float | None:
    """Seconds until a limit the provider says is used up (a ``remaining`` header at 0)
    resets, the longest of them; None when none is. Headers of both wire formats."""
    lower = {k.lower(): v for k, v in headers.items()}
    at = now or datetime.now(UTC)
    longest: float | None = None
    for pairs, reader in ((_OPENAI, _duration), (_ANTHROPIC, None)):
        for remaining, reset in pairs:
            left, when = lower.get(remaining), lower.get(reset)
            if left is None or when is None or left.strip() != "0":
                continue
            seconds = reader(when) if reader is not None else _until(when, at)
            if seconds is not None and seconds > 0:
                longest = max(longest or 0.0, min(seconds, MAX_BLOCK_SECONDS))
    return longest
