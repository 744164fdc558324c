"""The FastAPI app: ``uvicorn turnkeep.api.app:app``.

``create_app(settings)`` builds an app; its lifespan builds what the process shares
(api/resources.py): one Store, a sync and an asyncio Redis client, the agent
registry, the token table and the process's producer (store/producer.py). ``app``
reads its settings from the environment when it starts, not when this module is
imported.

Middleware, outermost first, all pure ASGI: latency metrics, trace spans of the
requests that admit or act on a turn (api/metrics.py; nothing while tracing is off),
authentication (every path but the public ones), the body limit; then FastAPI's
routing. Routes take what they need from the request (``principal_of``,
``services_of``), not from FastAPI dependencies: each dependency costs a resolution
per request.

Telemetry (docs/operations.md): the lifespan starts tracing when
``TURNKEEP_OTEL_ENDPOINT`` is set, has /metrics read the backlog, and counts the
turns the API settles through its publisher; ``app`` formats the process's log lines
(``TURNKEEP_LOG_FORMAT``).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI

from turnkeep.api import openapi, problems
from turnkeep.api.a2a.routes import PUBLIC_PATTERNS as A2A_PUBLIC_PATTERNS
from turnkeep.api.a2a.routes import ROOT_CARD as A2A_ROOT_CARD
from turnkeep.api.auth import Authenticate
from turnkeep.api.http.bridges import PUBLIC_PATHS as BRIDGE_PATHS
from turnkeep.api.http.limits import BodyLimit
from turnkeep.api.mcp_server import McpSurface
from turnkeep.api.metrics import CountingPublisher, LatencyMiddleware, Metrics, TraceMiddleware
from turnkeep.api.resources import ApiResources
from turnkeep.api.stream_tokens import StreamTokens
from turnkeep.runtime.obs import logs, tracing
from turnkeep.runtime.obs.redact import Redactor, install
from turnkeep.runtime.planes import planes, resolve
from turnkeep.runtime.settings import Settings, get_settings
from turnkeep.store.producer import Backlog
from turnkeep.store.records import EventRecord

log = logging.getLogger(__name__)

#: uvicorn's loggers with handlers of their own (uvicorn.error propagates to uvicorn)
UVICORN_LOGGERS = ("uvicorn", "uvicorn.access")


def _public(app: FastAPI) -> set[str]:
    """The paths anyone may call: liveness, readiness, the API's documentation, the
    A2A root card (the per-agent cards: ``A2A_PUBLIC_PATTERNS``) and the chat bridges'
    inbound routes (each checks its provider's signature instead: api/http/bridges.py)."""
    docs = (app.openapi_url, app.docs_url, app.redoc_url, app.swagger_ui_oauth2_redirect_url)
    return {"/healthz", "/readyz", A2A_ROOT_CARD, *BRIDGE_PATHS, *(p for p in docs if p)}


def create_app(settings: Settings | None = None, *, own_logging: bool | None = None) -> FastAPI:
    """An app for ``settings`` (the environment's, read at start-up, when None).

    ``own_logging``: format the process's log lines (runtime/obs/logs.py) at start-up; by
    default only an app of the environment's settings does (``uvicorn turnkeep.api.app:app``),
    and one built for given settings (tests, a host embedding it) leaves the host's
    logging alone."""
    metrics = Metrics()
    mcp = McpSurface()
    if own_logging is None:
        own_logging = settings is None

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        resolved = settings if settings is not None else get_settings()
        # the process's redactor: log records from here on, and problem bodies
        install(Redactor.from_settings(resolved))
        if own_logging:
            logs.configure(resolved.obs.log_format, loggers=UVICORN_LOGGERS)
        tracing.configure("turnkeep-api", resolved.obs.otel_endpoint)
        services = ApiResources.build(resolved, metrics)
        store = services.store

        def agent_of(event: EventRecord) -> str:
            return store.reads.get_turn(event.tenant_id, event.session_id, event.turn_id).agent_name

        # the turns the API settles are counted as their terminal events go out
        services.publisher = CountingPublisher(services.redis, metrics, agent_of)
        metrics.watch(Backlog(services.producer, store))
        if not services.tokens.configured:
            log.warning("no API tokens configured: every request but health and docs answers 503")
        app.state.settings = resolved
        app.state.tokens = services.tokens
        app.state.stream_tokens = StreamTokens.from_settings(resolved)
        app.state.services = services
        try:
            # MCP sessions end before the services they use close
            async with mcp.running():
                yield
        finally:
            await services.close()

    app = FastAPI(title="turnkeep", version="1", lifespan=lifespan, openapi_url="/openapi.json")
    problems.install(app)
    # /openapi.json: what every route does besides its own (api/openapi.py); /mcp and
    # the A2A endpoints below are Starlette routes with their own discovery, not in it
    openapi.install(app, public=_public(app))
    # every plane's routers, in the planes' order (runtime/planes/), then MCP's mount
    for plane in planes():
        for ref in plane.routers:
            app.include_router(resolve(ref))
    mcp.mount(app)  # /mcp: MCP over Streamable HTTP (api/mcp_server.py)
    app.add_middleware(BodyLimit, limit=lambda: app.state.settings.bounds.max_body_bytes)
    # before the body is read: an unauthenticated caller never gets to send a megabyte
    app.add_middleware(
        Authenticate,
        tokens=lambda: app.state.tokens,
        public=_public(app),
        public_patterns=A2A_PUBLIC_PATTERNS,
        # ?stream_token= on a session's events, in place of the header
        url_credentials=lambda: app.state.stream_tokens,
    )
    app.add_middleware(TraceMiddleware)
    app.add_middleware(LatencyMiddleware, metrics=metrics)
    return app


app = create_app()
