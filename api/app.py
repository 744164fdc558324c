"""The FastAPI app: ``uvicorn api.app:app``.

``create_app(settings)`` builds an app; its lifespan builds what the process shares
(api/services.py): one Store, a sync and an asyncio Redis client, the agent
registry, the token table and the process's producer (store/producer.py). ``app``
reads its settings from the environment when it starts, not when this module is
imported.

Middleware, outermost first, all pure ASGI: latency metrics, authentication (every
path but the public ones), the body limit; then FastAPI's routing. Routes take what
they need from the request (``principal_of``, ``services_of``), not from FastAPI
dependencies: each dependency costs a resolution per request.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI

from api import problems
from api.auth import Authenticate
from api.limits import BodyLimit
from api.metrics import LatencyMiddleware, Metrics
from api.routes_events import router as events_router
from api.routes_health import router as health_router
from api.routes_sessions import router as sessions_router
from api.routes_turns import router as turns_router
from api.services import Services
from runtime.settings import Settings, get_settings

log = logging.getLogger(__name__)


def _public(app: FastAPI) -> set[str]:
    """The paths anyone may call: liveness, readiness and the API's documentation."""
    docs = (app.openapi_url, app.docs_url, app.redoc_url, app.swagger_ui_oauth2_redirect_url)
    return {"/healthz", "/readyz", *(p for p in docs if p)}


def create_app(settings: Settings | None = None) -> FastAPI:
    """An app for ``settings`` (the environment's, read at start-up, when None)."""
    metrics = Metrics()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        resolved = settings if settings is not None else get_settings()
        services = Services.build(resolved, metrics)
        if not services.tokens.configured:
            log.warning("no API tokens configured: every request but health and docs answers 503")
        app.state.settings = resolved
        app.state.tokens = services.tokens
        app.state.services = services
        try:
            yield
        finally:
            await services.close()

    app = FastAPI(title="turnkeep", version="1", lifespan=lifespan, openapi_url="/openapi.json")
    problems.install(app)
    for router in (health_router, turns_router, sessions_router, events_router):
        app.include_router(router)
    app.add_middleware(BodyLimit, limit=lambda: app.state.settings.max_body_bytes)
    # before the body is read: an unauthenticated caller never gets to send a megabyte
    app.add_middleware(Authenticate, tokens=lambda: app.state.tokens, public=_public(app))
    app.add_middleware(LatencyMiddleware, metrics=metrics)
    return app


app = create_app()
