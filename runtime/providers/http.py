"""HTTP plumbing shared by the provider adapters: SSE framing, error classification,
cancellation checks and live-delta forwarding.

Exception messages built here carry the provider name, HTTP status, the provider's
error type/code and request id only. Provider error *messages* are left out on
purpose: some echo parts of the request (the prompt) back.
"""

from __future__ import annotations

import email.utils
import json
import logging
import math
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC
from typing import Any

import httpx

from turnkeep.runtime.errors import (
    ContextOverflow,
    ModelError,
    PermanentModelError,
    ProviderRateLimited,
    TransientModelError,
)
from turnkeep.runtime.providers import paced_calls
from turnkeep.runtime.providers.base import DeltaSink, StopCheck
from turnkeep.runtime.signals import ModelCallCancelled

log = logging.getLogger(__name__)

#: lower-case phrases in an error body meaning "the request is longer than the context"
_OVERFLOW_MARKERS = (
    "context_length_exceeded",  # OpenAI error code
    "maximum context length",  # OpenAI and compatible servers (vLLM) message text
    "prompt is too long",  # Anthropic invalid_request_error message
    "request_too_large",  # Anthropic 413: only a smaller context can fix it
)
#: provider error types/codes (in-stream or in a body) that a later attempt may not hit
_TRANSIENT_KINDS = frozenset(
    {
        "overloaded_error",
        "api_error",
        "rate_limit_error",
        "timeout_error",
        "server_error",
        "rate_limit_exceeded",
    }
)
#: of those, the ones that mean "the rate limit": fed to a declared limit's pace
_RATE_LIMIT_KINDS = frozenset({"rate_limit_error", "rate_limit_exceeded"})


@dataclass(frozen=True)
class SSEEvent:
    """One dispatched server-sent event: its ``event:`` name and joined ``data:`` lines."""

    event: str
    data: str


def iter_lines(chunks: Iterable[bytes]) -> Iterator[str]:
    """Split a byte stream into lines on LF, dropping a trailing CR.

    Done on bytes rather than with ``str.splitlines`` because that also splits on
    U+2028 and friends, which may appear raw inside JSON strings, and because a
    multi-byte character can straddle two network chunks.
    """
    buf = b""
    for chunk in chunks:
        buf += chunk
        *lines, buf = buf.split(b"\n")
        for raw in lines:
            yield raw.rstrip(b"\r").decode("utf-8", errors="replace")
    if buf:
        yield buf.rstrip(b"\r").decode("utf-8", errors="replace")


def iter_sse(lines: Iterable[str]) -> Iterator[SSEEvent]:
    """Frame lines into events as the SSE spec says; an unterminated last event is dropped."""
    event = ""
    data: list[str] = []
    for line in lines:
        if not line:
            if data:
                yield SSEEvent(event or "message", "\n".join(data))
            event, data = "", []
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if name == "event":
            event = value
        elif name == "data":
            data.append(value)


def parse_retry_after(
    headers: Mapping[str, str], *, now: Callable[[], float] = time.time
) -> float | None:
    """Seconds the server asked us to wait, from ``retry-after-ms`` (OpenAI) or
    ``Retry-After`` as delta-seconds or an HTTP-date; None when absent or unreadable."""
    lower = {k.lower(): v for k, v in headers.items()}
    for key, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = lower.get(key)
        if value is None:
            continue
        try:
            seconds = float(value.strip()) * scale
        except ValueError:
            seconds = math.nan
        if math.isfinite(seconds) and seconds >= 0:
            return seconds
        if key == "retry-after":
            try:
                when = email.utils.parsedate_to_datetime(value.strip())
            except (TypeError, ValueError, IndexError):
                return None
            if when.tzinfo is None:
                when = when.replace(tzinfo=UTC)
            return max(0.0, when.timestamp() - now())
    return None


def _error_kind(body: bytes) -> str:
    """``type/code`` of a JSON error body (OpenAI ``error.code``, Anthropic ``error.type``)."""
    try:
        parsed = json.loads(body)
    except ValueError:
        return ""
    err = parsed.get("error") if isinstance(parsed, dict) else None
    if not isinstance(err, dict):
        return ""
    parts = [str(err[k])[:64] for k in ("type", "code") if isinstance(err.get(k), str | int)]
    return "/".join(parts)


def error_for_status(
    provider: str, status: int, headers: Mapping[str, str], body: bytes
) -> ModelError:
    """Classify a non-2xx reply."""
    kind = _error_kind(body)
    request_id = headers.get("x-request-id") or headers.get("request-id")
    where = f"{provider}: HTTP {status}" + (f" {kind}" if kind else "")
    if request_id:
        where += f" (request id {request_id[:80]})"
    text = body.decode("utf-8", errors="replace").lower()
    if status in (400, 413) and any(m in text for m in _OVERFLOW_MARKERS):
        return ContextOverflow(where)
    # OpenAI answers an exhausted quota with 429 too, but waiting never fixes billing.
    if status == 429 and "insufficient_quota" in text:
        return PermanentModelError(where)
    if status == 429:
        return ProviderRateLimited(where, retry_after=parse_retry_after(headers))
    # 408 is the server timing out our request: the same thing as a client timeout.
    if status == 408 or status >= 500:
        return TransientModelError(where, retry_after=parse_retry_after(headers))
    return PermanentModelError(where)


def error_for_payload(provider: str, error: object) -> ModelError:
    """Classify an error object delivered inside a 200 stream."""
    if not isinstance(error, dict):
        return PermanentModelError(f"{provider}: malformed error event")
    etype = str(error.get("type") or "")[:64]
    code = str(error.get("code") or "")[:64]
    message = str(error.get("message") or "").lower()
    where = f"{provider}: stream error {etype}" + (f"/{code}" if code else "")
    if code == "context_length_exceeded" or any(m in message for m in _OVERFLOW_MARKERS):
        return ContextOverflow(where)
    if etype in _RATE_LIMIT_KINDS or code in _RATE_LIMIT_KINDS:
        return ProviderRateLimited(where)
    if etype in _TRANSIENT_KINDS or code in _TRANSIENT_KINDS:
        return TransientModelError(where)
    return PermanentModelError(where)


def error_for_transport(provider: str, exc: httpx.HTTPError) -> ModelError:
    """Classify a failure below HTTP: timeouts, refused or reset connections, truncation."""
    what = f"{provider}: {type(exc).__name__}: {exc}"[:300]
    if isinstance(
        exc,
        httpx.TimeoutException | httpx.NetworkError | httpx.RemoteProtocolError | httpx.ProxyError,
    ):
        return TransientModelError(what)
    return PermanentModelError(what)


def parse_object(provider: str, data: str) -> dict[str, Any]:
    """Decode one event's JSON payload; anything but a JSON object is a malformed reply."""
    try:
        parsed = json.loads(data)
    except ValueError:
        raise PermanentModelError(f"{provider}: malformed event (not JSON)") from None
    if not isinstance(parsed, dict):
        raise PermanentModelError(f"{provider}: malformed event (not an object)")
    return parsed


def parse_arguments(provider: str, raw: str) -> dict[str, Any]:
    """Decode a tool call's concatenated argument fragments; none at all means ``{}``."""
    if not raw.strip():
        return {}
    try:
        parsed = json.loads(raw)
    except ValueError:
        raise PermanentModelError(f"{provider}: tool call arguments are not JSON") from None
    if not isinstance(parsed, dict):
        raise PermanentModelError(f"{provider}: tool call arguments are not an object")
    return parsed


def check_stop(should_stop: StopCheck | None) -> None:
    if should_stop is not None and should_stop():
        raise ModelCallCancelled("model call aborted: the turn is being cancelled")


class DeltaEmitter:
    """Forwards live text deltas to the caller's sink.

    Deltas are speculative (never persisted), so a sink that raises is logged and
    dropped for the rest of the call rather than failing a model call that is fine.
    """

    def __init__(self, sink: DeltaSink | None) -> None:
        self._sink = sink

    def __call__(self, text: str) -> None:
        if self._sink is None or not text:
            return
        try:
            self._sink(text)
        except Exception:
            log.warning("delta sink failed; no more live deltas for this call", exc_info=True)
            self._sink = None


@contextmanager
def open_event_stream(
    client: httpx.Client,
    provider: str,
    url: str,
    *,
    headers: Mapping[str, str],
    payload: dict[str, Any],
    timeout: httpx.Timeout,
) -> Iterator[Iterator[SSEEvent]]:
    """POST ``payload`` and yield its SSE events; every failure leaves as a ModelError.

    httpx errors raised while the caller iterates are thrown back in here at the
    ``yield``, so one ``except`` classifies connect, status and mid-stream failures.
    Leaving the block closes the response, which is how a cancelled call hangs up.
    """
    try:
        with client.stream(
            "POST", url, headers=dict(headers), json=payload, timeout=timeout
        ) as response:
            # the rate limits' state as the provider reports it (a paced call's only)
            paced_calls.heard(response.headers)
            if not response.is_success:
                body = response.read()
                raise error_for_status(provider, response.status_code, response.headers, body)
            ctype = response.headers.get("content-type", "")
            if "text/event-stream" not in ctype:
                raise PermanentModelError(
                    f"{provider}: expected an event stream, got {ctype[:80] or 'no content type'!r}"
                )
            yield iter_sse(iter_lines(response.iter_bytes()))
    except httpx.HTTPError as exc:
        raise error_for_transport(provider, exc) from exc


class HttpProvider:
    """What both adapters share: the endpoint, the key, the timeouts and the client.

    Thread-safe: an ``httpx.Client`` may be shared by many concurrent calls.
    """

    #: the endpoint's path below the base URL
    path = ""

    def __init__(
        self,
        base_url: str,
        api_key: str,
        *,
        timeout: float = 60.0,
        client: httpx.Client | None = None,
    ) -> None:
        self._url = base_url.rstrip("/") + self.path
        self._api_key = api_key
        # The read timeout bounds the gap between stream events, not the whole stream.
        self._timeout = httpx.Timeout(timeout, connect=min(timeout, 10.0))
        self._owns_client = client is None
        self._client = client if client is not None else httpx.Client()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._url!r})"

    def close(self) -> None:
        if self._owns_client:
            self._client.close()
