"""Prometheus metrics of one app: admissions by outcome and request latency.

Each app has its own registry, so building several apps in one process (tests)
never registers a metric twice. Labels carry route templates, never ids, so the
label sets are few: each one's child is looked up once and kept (``labels()`` takes
a lock and builds a key on every call).
"""

from __future__ import annotations

import time

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from starlette.types import ASGIApp, Message, Receive, Scope, Send

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
        self._admitted: dict[str, Counter] = {}
        self._timers: dict[tuple[str, str, int], Histogram] = {}

    def admitted(self, outcome: str) -> None:
        """Count one admission by its outcome (``created``, ``replayed`` or an error code)."""
        child = self._admitted.get(outcome)
        if child is None:
            child = self._admitted[outcome] = self.admissions.labels(outcome)
        child.inc()

    def observe(self, method: str, route: str, status: int, seconds: float) -> None:
        key = (method, route, status)
        child = self._timers.get(key)
        if child is None:
            child = self._timers[key] = self.latency.labels(method, route, str(status))
        child.observe(seconds)

    def render(self) -> bytes:
        return generate_latest(self.registry)


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
