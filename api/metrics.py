"""The API's telemetry: Prometheus metrics of one app, and the trace spans of the
requests that admit or act on a turn (docs/operations.md).

Metrics: admissions by outcome, request latency, the turns the API settles
(``turnkeep_turns_finished_total``: cancellations, counted as they are published by
``CountingPublisher``, which every surface publishes its commits through), and the
deployment's backlog (store/producer.py ``Backlog``: queue depth, waiting and
runnable turns), read when /metrics is scraped.

Each app has its own registry, so building several apps in one process (tests)
never registers a metric twice. Labels carry route templates, agent names, states and
codes, never ids, so the label sets are few: each one's child is looked up once and
kept (``labels()`` takes a lock and builds a key on every call).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from typing import Any

import redis
from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.registry import Collector
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from turnkeep.runtime.obs import tracing
from turnkeep.runtime.payloads import TurnFailed
from turnkeep.runtime.states import EventType
from turnkeep.store.channel import Publisher
from turnkeep.store.records import EventRecord

log = logging.getLogger(__name__)

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.admissions = Counter(
            "turnkeep_admissions",
            "Turn admissions by outcome",
            ["outcome"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "turnkeep_http_request_seconds",
            "Time from request to response start, by method, route and status",
            ["method", "route", "status"],
            registry=self.registry,
            buckets=(
                0.001,
                0.0025,
                0.005,
                0.01,
                0.025,
                0.05,
                0.1,
                0.25,
                0.5,
                1,
                2.5,
                5,
                10,
                30,
                60,
            ),
        )
        self.finishes = Counter(
            "turnkeep_turns_finished",
            "Turns this process settled terminal (cancellations), by agent, state and code",
            ["agent", "state", "code"],
            registry=self.registry,
        )
        self._admitted: dict[str, Counter] = {}
        self._timers: dict[tuple[str, str, int], Histogram] = {}
        self._finished: dict[tuple[str, str, str], Counter] = {}
        self._watched: set[int] = set()

    def admitted(self, outcome: str) -> None:
        """Count one admission by its outcome (``created``, ``replayed`` or an error code)."""
        child = self._admitted.get(outcome)
        if child is None:
            child = self._admitted[outcome] = self.admissions.labels(outcome)
        child.inc()

    def finished(self, agent: str, state: str, code: str = "") -> None:
        """Count one turn the API settled."""
        key = (agent, state, code)
        child = self._finished.get(key)
        if child is None:
            child = self._finished[key] = self.finishes.labels(agent, state, code)
        child.inc()

    def watch(self, collector: Collector) -> None:
        """Read ``collector`` (the backlog) at every scrape too; once per object."""
        if id(collector) not in self._watched:
            self._watched.add(id(collector))
            self.registry.register(collector)

    def observe(self, method: str, route: str, status: int, seconds: float) -> None:
        key = (method, route, status)
        child = self._timers.get(key)
        if child is None:
            child = self._timers[key] = self.latency.labels(method, route, str(status))
        child.observe(seconds)

    def render(self) -> bytes:
        """The Prometheus text (blocking: the backlog may read Redis and Postgres)."""
        return generate_latest(self.registry)


#: the terminal event types, and the state each one settles a turn in
_SETTLES = {
    EventType.TURN_COMPLETED.value: "completed",
    EventType.TURN_FAILED.value: "failed",
    EventType.TURN_CANCELLED.value: "cancelled",
}


class CountingPublisher(Publisher):
    """The API's publisher, counting each turn the API settled as it publishes the
    terminal event (a cancellation of a turn no worker was stepping, or an interrupting
    admission's): every surface publishes what it committed through it, after the
    commit, off the event loop. ``agent_of`` finds the event's agent (one read:
    cancellations are rare); "" when it cannot."""

    def __init__(
        self, client: redis.Redis, metrics: Metrics, agent_of: Callable[[EventRecord], str]
    ) -> None:
        super().__init__(client)
        self.metrics = metrics
        self.agent_of = agent_of

    def committed(self, *events: EventRecord) -> None:
        super().committed(*events)
        for e in events:
            state = _SETTLES.get(e.type)
            if state is None:
                continue
            try:
                agent = self.agent_of(e)
            except Exception as exc:  # counted all the same, without its agent
                log.debug("agent of a settled turn not read: %s", type(exc).__name__)
                agent = ""
            # only a failed turn's event carries a typed error (runtime/payloads.py)
            error = TurnFailed.from_json(e.data).error if e.type == EventType.TURN_FAILED else None
            code = str(error.get("code", "")) if isinstance(error, dict) else ""
            self.metrics.finished(agent, state, code)


class LatencyMiddleware:
    """Times each HTTP request until its response starts (so SSE streams count once)."""

    def __init__(self, app: ASGIApp, *, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()

        async def timed_send(message: Message) -> None:
            if message["type"] == "http.response.start":
                route = scope.get("route")
                template = getattr(route, "path", None) or "unmatched"
                self.metrics.observe(
                    scope["method"], template, message["status"], time.perf_counter() - started
                )
            await send(message)

        await self.app(scope, receive, timed_send)


#: the POST routes traced here, by route template: those that act on a turn (their
#: answer names it). Admissions are traced by the service (api/service/admission.py),
#: which every surface shares
TRACED = {
    "/v1/sessions/{sid}/turns/{tid}/cancel": "turnkeep.cancel",
    "/v1/sessions/{sid}/turns/{tid}/inputs/{rid}": "turnkeep.answer",
}


class TraceMiddleware:
    """With tracing on (runtime/obs/tracing.py), a span in the turn's trace for each
    answered request of ``TRACED``, a cancellation or an answer: a child of the turn's
    admission span. The ids come from the answer (``session_id``, ``turn_id``) and the
    caller's tenant, so the span is recorded once the answer went out, from the
    request's start."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or not tracing.enabled():
            await self.app(scope, receive, send)
            return
        started = time.time_ns()
        answered: dict[str, Any] = {"status": 0, "name": None}
        body = bytearray()

        async def watched(message: Message) -> None:
            if message["type"] == "http.response.start":
                answered["status"] = message["status"]
                answered["name"] = TRACED.get(getattr(scope.get("route"), "path", ""))
            elif message["type"] == "http.response.body" and answered["name"]:
                body.extend(message.get("body", b""))
            await send(message)

        await self.app(scope, receive, watched)
        name, status = answered["name"], answered["status"]
        if name is not None and status in (200, 202):
            _record(scope, name, status, bytes(body), started)


def _record(scope: Scope, name: str, status: int, body: bytes, started: int) -> None:
    tenant = getattr(scope.get("state", {}).get("principal"), "tenant", None)
    try:
        answer = json.loads(body)
        session_id, turn_id = str(answer["session_id"]), str(answer["turn_id"])
    except (ValueError, KeyError, TypeError):
        return
    if not isinstance(tenant, str):
        return
    tracing.record(
        name,
        tenant,
        session_id,
        turn_id,
        start_ns=started,
        root=False,
        attributes={
            "http.request.method": "POST",
            "http.route": str(getattr(scope.get("route"), "path", "")),
            "http.response.status_code": status,
            "turnkeep.agent": str(answer.get("agent") or ""),
        },
    )
