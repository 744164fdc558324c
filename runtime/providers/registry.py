"""Building a provider from an agent definition's provider name and model options."""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable
from typing import Any

import httpx
from pydantic import SecretStr

from turnkeep.runtime.errors import DefinitionError, PermanentModelError, UnknownProvider
from turnkeep.runtime.hashing import sha256_hex
from turnkeep.runtime.providers.anthropic import AnthropicMessagesProvider
from turnkeep.runtime.providers.base import Provider
from turnkeep.runtime.providers.openai import OpenAIChatProvider
from turnkeep.runtime.providers.retry import RetryingProvider
from turnkeep.runtime.settings import providers_now

#: builds an unwrapped provider from an agent's model options
ProviderFactory = Callable[[dict[str, Any]], Provider]

OPENAI_DEFAULT_BASE_URL = "https://api.openai.com/v1"
ANTHROPIC_DEFAULT_BASE_URL = "https://api.anthropic.com"
DEFAULT_TIMEOUT = 60.0

#: providers defined in modules that register themselves on import, imported on first use
_SELF_REGISTERING = {"demo": "turnkeep.runtime.providers.demo_model"}

_lock = threading.Lock()
_factories: dict[str, tuple[ProviderFactory, bool]] = {}
_client: httpx.Client | None = None


def _shared_client() -> httpx.Client:
    """One connection pool for every provider built here.

    Providers may be built per turn; one client per provider would leak a pool each
    time. Requests carry their own timeout and full URL, so sharing is safe.
    """
    global _client
    with _lock:
        if _client is None:
            _client = httpx.Client(limits=httpx.Limits(max_connections=200))
        return _client


def _timeout(model_options: dict[str, Any]) -> float:
    value = model_options.get("timeout", DEFAULT_TIMEOUT)
    if not isinstance(value, int | float) or isinstance(value, bool) or value <= 0:
        raise DefinitionError("model option 'timeout' must be a positive number of seconds")
    return float(value)


def _endpoint(provider: str, default_url: str) -> tuple[str, str]:
    """The base URL and key the settings' providers section gives ``provider``, read
    from the environment at each build (a provider is built per turn: ``providers_now``)."""
    section = providers_now()
    base_url = getattr(section, f"{provider}_base_url") or default_url
    api_key: SecretStr = getattr(section, f"{provider}_api_key")
    return base_url, api_key.get_secret_value()


def _credentials(provider: str, default_url: str) -> tuple[str, str]:
    base_url, api_key = _endpoint(provider, default_url)
    # A self-hosted compatible server may need no key; the public API always does.
    if not api_key and base_url == default_url:
        raise PermanentModelError(f"TURNKEEP_{provider.upper()}_API_KEY is not set")
    return base_url, api_key


#: the providers whose endpoint and key come from ``TURNKEEP_<PROVIDER>_*``
_ENDPOINTS = {
    "openai": OPENAI_DEFAULT_BASE_URL,
    "anthropic": ANTHROPIC_DEFAULT_BASE_URL,
}


def endpoint_id(provider: str) -> str:
    """Where ``provider``'s calls go, as its rate limits count them: its base URL and
    a digest of its key (never the key), the same on every worker configured alike;
    a provider of another kind is its name."""
    default_url = _ENDPOINTS.get(provider)
    if default_url is None:
        return provider
    base_url, key = _endpoint(provider, default_url)
    return f"{base_url.rstrip('/')}#{sha256_hex(key)[:16]}"


def _openai(model_options: dict[str, Any]) -> Provider:
    base_url, api_key = _credentials("openai", OPENAI_DEFAULT_BASE_URL)
    return OpenAIChatProvider(
        base_url, api_key, timeout=_timeout(model_options), client=_shared_client()
    )


def _anthropic(model_options: dict[str, Any]) -> Provider:
    base_url, api_key = _credentials("anthropic", ANTHROPIC_DEFAULT_BASE_URL)
    return AnthropicMessagesProvider(
        base_url, api_key, timeout=_timeout(model_options), client=_shared_client()
    )


def register_provider(name: str, factory: ProviderFactory, *, retry: bool = True) -> None:
    """Make ``make_provider(name, ...)`` build providers with ``factory``.

    ``retry=False`` hands the factory's provider out unwrapped, for providers that
    never fail transiently or that want to show such failures to the caller.
    Registering a name again replaces it.
    """
    with _lock:
        _factories[name] = (factory, retry)


def make_provider(provider: str, model_options: dict[str, Any]) -> Provider:
    """A ready provider for an agent definition, transient failures retried.

    Raises ``UnknownProvider`` for an unknown provider name, ``DefinitionError`` for
    bad options, and
    ``PermanentModelError`` when the provider's API key is not configured.
    """
    with _lock:
        entry = _factories.get(provider)
    if entry is None and provider in _SELF_REGISTERING:
        module = _SELF_REGISTERING[provider]
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name != module:  # a missing dependency of the module is a real bug
                raise
        with _lock:
            entry = _factories.get(provider)
    if entry is None:
        raise UnknownProvider(f"unknown model provider {provider[:64]!r}")
    factory, retry = entry
    inner = factory(dict(model_options))
    return RetryingProvider(inner) if retry else inner


register_provider("openai", _openai)
register_provider("anthropic", _anthropic)
