"""Bearer tokens and the tenant they stand for. Fails closed.

The token table (``TURNKEEP_TOKENS``: its format, the tenant and subject patterns, the
digests) is runtime/tokens.py, pure, shared with the ``turnkeep tokens`` commands; its
names are re-exported here. A request presents ``Authorization: Bearer <token>``. No
token configured answers 503, a missing or wrong one 401. The resulting ``Principal``
scopes every store query by its tenant.

``Authenticate`` (pure ASGI middleware) checks every request before routing, except
those to the few public paths (liveness, readiness, the API's documentation, the A2A
agent cards, the console's static shell: ``CONSOLE_PATHS``): a route added later is
protected without having to ask for it. Routes read the principal with
``principal_of(request)``.

A request without an ``Authorization`` header may present a short-lived stream token
instead, on the one path that accepts it (``?stream_token=`` on a session's events,
api/stream_tokens.py); the bearer token itself is only ever read from the header.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection
from typing import Protocol

from starlette.requests import HTTPConnection
from starlette.types import ASGIApp, Receive, Scope, Send

from turnkeep.api import problems, timings
from turnkeep.api.errors import AuthNotConfigured, ServiceError, Unauthorized
from turnkeep.runtime.tokens import ID_PATTERN, SUBJECT_PATTERN, Principal, TokenTable, token_digest

__all__ = [
    "CONSOLE_PATHS",
    "ID_PATTERN",
    "SUBJECT_PATTERN",
    "Authenticate",
    "Principal",
    "TokenTable",
    "UrlCredentials",
    "authenticate",
    "principal_of",
    "token_digest",
]

#: the web console's shell and assets (api/console.py): static, no tenant data, so no
#: token; the page then calls /v1 with the token a person gives it
CONSOLE_PATHS = re.compile(r"^/console/?$|^/console/static/[a-z]+\.(?:js|css)$")


def authenticate(table: TokenTable, authorization: str) -> Principal:
    """The principal of an ``Authorization`` header value, or a 503/401 problem."""
    if not table.configured:
        raise AuthNotConfigured()
    scheme, _, token = authorization.partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        raise Unauthorized()
    principal = table.lookup(token)
    if principal is None:
        raise Unauthorized()
    return principal


class UrlCredentials(Protocol):
    """A credential a request may carry in its URL instead of the header, on the paths
    it opens (``turnkeep.api.stream_tokens.StreamTokens``)."""

    def authenticate(self, method: str, path: str, query: bytes) -> Principal | None:
        """The principal it stands for; None when the request presents none; a
        ``ServiceError`` (raised) when it presents a bad one."""
        ...


class Authenticate:
    """Pure ASGI middleware: the caller's principal into the request's state, or a
    503/401 problem before anything else runs. ``tokens`` is read per request (the
    table lives on the app, built at start-up); ``public`` paths need no token;
    ``url_credentials``, asked only when there is no ``Authorization`` header, may
    stand in for one on the paths it opens."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        tokens: Callable[[], TokenTable],
        public: Collection[str],
        public_patterns: Collection[re.Pattern[str]] = (),
        url_credentials: Callable[[], UrlCredentials] | None = None,
    ) -> None:
        self.app = app
        self.tokens = tokens
        self.public = frozenset(public)
        self.url_credentials = url_credentials
        #: public paths with a variable part (A2A's per-agent cards), matched in full
        self.public_patterns = tuple(public_patterns)

    def _is_public(self, path: str) -> bool:
        return (
            path in self.public
            or any(p.fullmatch(path) for p in self.public_patterns)
            or CONSOLE_PATHS.fullmatch(path) is not None
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket":
            # none is served; fail closed should one ever be mounted without auth
            await send({"type": "websocket.close", "code": 1008})
            return
        if scope["type"] != "http" or self._is_public(scope["path"]):
            await self.app(scope, receive, send)
            return
        started = timings.now() if timings.ENABLED else 0.0
        authorization = b""
        for name, value in scope["headers"]:
            if name == b"authorization":
                authorization = value
                break
        try:
            principal = None
            if not authorization and self.url_credentials is not None:
                principal = self.url_credentials().authenticate(
                    scope["method"], scope["path"], scope["query_string"]
                )
            if principal is None:
                principal = authenticate(self.tokens(), authorization.decode("latin-1"))
        except ServiceError as exc:
            await problems.answer(exc).response()(scope, receive, send)
            return
        state = scope.setdefault("state", {})
        state["principal"] = principal
        if timings.ENABLED:
            ended = timings.now()
            state["timings"] = {"auth": ended - started, "_end": ended}
        await self.app(scope, receive, send)


def principal_of(conn: HTTPConnection) -> Principal:
    """Who called: set by ``Authenticate`` for every non-public path."""
    principal = conn.scope["state"]["principal"]
    assert isinstance(principal, Principal)
    return principal
