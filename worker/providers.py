"""Which provider adapter serves an agent; one instance per (provider, options) per process."""

from __future__ import annotations

import threading

from turnkeep.runtime.agents.definition import AgentDefinition
from turnkeep.runtime.hashing import sha256_hex
from turnkeep.runtime.providers.base import Provider
from turnkeep.runtime.providers.registry import make_provider

_lock = threading.Lock()
_cache: dict[tuple[str, str], Provider] = {}


def provider_for(agent: AgentDefinition) -> Provider:
    key = (agent.provider, sha256_hex(agent.model_options))
    with _lock:
        if key not in _cache:
            _cache[key] = make_provider(agent.provider, dict(agent.model_options))
        return _cache[key]
