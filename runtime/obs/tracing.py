"""Traces (OpenTelemetry), off unless ``TURNKEEP_OTEL_ENDPOINT`` names an OTLP/HTTP
collector (docs/operations.md).

One trace per turn: the API's admission span is its root; every attempt a worker makes
(``turnkeep.run_session``) is a child of it, and each step (``turnkeep.model``,
``turnkeep.tool``) and checkpoint (``turnkeep.checkpoint``) a child of the attempt.
Spans carry durable ids and names only (tenant, session, turn, step, fence, attempt,
agent, tool, event type, seq), never a message, argument or result.

Why the ids are derived rather than propagated: the trace id is the first 16 bytes of
``sha256("tenant/session/turn")`` and the admission span's id the next 8
(``turn_ids``). A propagated ``traceparent`` would have to ride on the Celery message,
which names a session, not a turn (one delivery may run several turns), and which the
recovery scan sends again without it after a crash; it would also have to be stored to
survive a lost message. Derived ids need nothing carried or stored: the admission and
every attempt, whoever runs it and however late, join the same trace.

Off (the default), nothing of the SDK is imported and every helper here returns at
once: a ``nullcontext``-like block yielding the API's no-op span.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace

log = logging.getLogger(__name__)

#: what span attributes may hold
Attributes = Mapping[str, str | int | float | bool]
#: the no-op span the helpers yield while tracing is off
NO_SPAN = trace.INVALID_SPAN
#: the signal path an OTLP/HTTP collector takes traces at
TRACES_PATH = "/v1/traces"

_lock = threading.Lock()
_tracer: trace.Tracer | None = None
_provider: Any = None
#: the (trace id, span id) the next root span takes (``record``, admission only)
_preset: ContextVar[tuple[int, int] | None] = ContextVar("turnkeep_trace_ids", default=None)


def enabled() -> bool:
    return _tracer is not None


def traces_url(endpoint: str) -> str:
    """The collector's traces URL: ``endpoint`` as given when it ends in /v1/traces,
    else that path appended (``http://collector:4318`` is the usual setting)."""
    endpoint = endpoint.rstrip("/")
    return endpoint if endpoint.endswith(TRACES_PATH) else endpoint + TRACES_PATH


def configure(service: str, endpoint: str) -> bool:
    """Trace this process to ``endpoint`` (OTLP/HTTP, protobuf, batched); False and
    nothing done when it is empty. Once per process; ``OTEL_SERVICE_NAME`` and the
    exporter's ``OTEL_EXPORTER_OTLP_*`` / ``OTEL_BSP_*`` variables are honoured."""
    global _tracer, _provider
    if not endpoint:
        return False
    with _lock:
        if _tracer is not None:
            return True
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
        from opentelemetry.sdk.trace.id_generator import RandomIdGenerator

        class TurnIds(RandomIdGenerator):
            """Random ids, but the preset ones for an admission's root span."""

            def generate_trace_id(self) -> int:
                preset = _preset.get()
                return preset[0] if preset else super().generate_trace_id()

            def generate_span_id(self) -> int:
                preset = _preset.get()
                return preset[1] if preset else super().generate_span_id()

        named = {} if os.environ.get("OTEL_SERVICE_NAME") else {"service.name": service}
        provider = TracerProvider(resource=Resource.create(named), id_generator=TurnIds())
        provider.add_span_processor(
            BatchSpanProcessor(OTLPSpanExporter(endpoint=traces_url(endpoint)))
        )
        _provider = provider
        _tracer = provider.get_tracer("turnkeep")
    log.info("tracing to %s as %s", traces_url(endpoint), service)
    return True


def shutdown() -> None:
    """Export what is still batched and stop (the SDK also does it at exit)."""
    global _tracer, _provider
    with _lock:
        provider, _provider, _tracer = _provider, None, None
    if provider is not None:
        provider.shutdown()


def turn_ids(tenant_id: str, session_id: str, turn_id: str) -> tuple[int, int]:
    """The turn's trace id and its admission (root) span's id (see the module
    docstring); never zero, which OpenTelemetry reads as "none"."""
    digest = hashlib.sha256(f"{tenant_id}/{session_id}/{turn_id}".encode()).digest()
    trace_id = int.from_bytes(digest[:16], "big") or 1
    return trace_id, int.from_bytes(digest[16:24], "big") or 1


def _under_admission(tenant_id: str, session_id: str, turn_id: str) -> otel_context.Context:
    trace_id, root_id = turn_ids(tenant_id, session_id, turn_id)
    parent = trace.SpanContext(
        trace_id, root_id, is_remote=True, trace_flags=trace.TraceFlags(trace.TraceFlags.SAMPLED)
    )
    return trace.set_span_in_context(trace.NonRecordingSpan(parent), otel_context.Context())


def ids(tenant_id: str, session_id: str, turn_id: str, **more: str | int | None) -> Attributes:
    """The span attributes of a turn's ids (``turnkeep.*``), None values left out."""
    found: dict[str, str | int] = {
        "turnkeep.tenant": tenant_id,
        "turnkeep.session": session_id,
        "turnkeep.turn": turn_id,
    }
    found.update({f"turnkeep.{k}": v for k, v in more.items() if v is not None})
    return found


def record(
    name: str,
    tenant_id: str,
    session_id: str,
    turn_id: str,
    *,
    start_ns: int,
    root: bool,
    attributes: Attributes | None = None,
) -> None:
    """A finished span in the turn's trace, from ``start_ns`` (``time.time_ns()``) to
    now: its root (the admission that created the turn, ``root``) or a child of it (a
    replayed admission, a cancellation, an answer). The API knows the ids only once
    it has answered, hence after the fact."""
    tracer = _tracer
    if tracer is None:
        return
    attrs = {**ids(tenant_id, session_id, turn_id), **(attributes or {})}
    kind = trace.SpanKind.SERVER
    if root:
        token = _preset.set(turn_ids(tenant_id, session_id, turn_id))
        try:
            span = tracer.start_span(
                name,
                context=otel_context.Context(),
                kind=kind,
                attributes=attrs,
                start_time=start_ns,
            )
        finally:
            _preset.reset(token)
    else:
        parent = _under_admission(tenant_id, session_id, turn_id)
        span = tracer.start_span(
            name, context=parent, kind=kind, attributes=attrs, start_time=start_ns
        )
    span.end()


@contextmanager
def _current(
    name: str, parent: otel_context.Context | None, kind: trace.SpanKind, attrs: Attributes | None
) -> Iterator[trace.Span]:
    assert _tracer is not None
    # no exception is recorded (its message may quote content): its type only
    with _tracer.start_as_current_span(
        name,
        context=parent,
        kind=kind,
        attributes=attrs,
        record_exception=False,
        set_status_on_exception=False,
    ) as span:
        try:
            yield span
        except BaseException as exc:
            span.set_attribute("error.type", type(exc).__name__)
            span.set_status(trace.StatusCode.ERROR, type(exc).__name__)
            raise


@contextmanager
def attempt(
    name: str, tenant_id: str, session_id: str, turn_id: str, attributes: Attributes | None = None
) -> Iterator[trace.Span]:
    """A worker's span for one attempt at a turn, a child of its admission; current in
    the block, so ``span`` nests under it."""
    if _tracer is None:
        yield NO_SPAN
        return
    parent = _under_admission(tenant_id, session_id, turn_id)
    attrs = {**ids(tenant_id, session_id, turn_id), **(attributes or {})}
    with _current(name, parent, trace.SpanKind.CONSUMER, attrs) as span:
        yield span


@contextmanager
def span(name: str, attributes: Attributes | None = None) -> Iterator[trace.Span]:
    """A span under the current one (a step under its attempt), current in the block."""
    if _tracer is None:
        yield NO_SPAN
        return
    with _current(name, None, trace.SpanKind.INTERNAL, attributes) as s:
        yield s
