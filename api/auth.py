"""Bearer tokens and the tenant they stand for. Fails closed.

``TURNKEEP_TOKENS`` is a JSON list of ``{"sha256": hex, "tenant": str, "subject": str,
"role": "admin" | "member" | "reader"}`` (role optional, ``member`` by default):
only the SHA-256 of each token is configured, never the token. The tenant is an id
(``[A-Za-z0-9._-]{1,128}``), the subject ``[A-Za-z0-9._@+-]{1,128}`` (no ``:``, no
whitespace or control characters: one subject cannot be dressed as another in a
journal's ``by`` or a Redis key). Several tokens may stand for the same principal, so a
token is rotated by adding the new one, moving clients over, then removing the old; a
digest listed twice for different principals is refused. A request presents
``Authorization: Bearer <token>``; its digest is compared with every configured one
by ``hmac.compare_digest``. No token configured answers 503, a missing or wrong one
401. The resulting ``Principal`` scopes every store query by its tenant.

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

import hashlib
import hmac
import json
import re
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Protocol

from starlette.requests import HTTPConnection
from starlette.types import ASGIApp, Receive, Scope, Send

from api.problems import Problem
from runtime.inputs import Role

#: tenant ids end up in Redis keys (store/keys.py): no ``:`` allowed
ID_PATTERN = re.compile(r"^[A-Za-z0-9._-]{1,128}$")
#: subjects are recorded (turns.submitted_by, every event's ``by``) and compared: an id's
#: characters and those of an e-mail address, nothing that could pass for a separator
SUBJECT_PATTERN = re.compile(r"^[A-Za-z0-9._@+-]{1,128}$")
_HEX = re.compile(r"^[0-9a-f]{64}$")
#: the web console's shell and assets (api/console.py): static, no tenant data, so no
#: token; the page then calls /v1 with the token a person gives it
CONSOLE_PATHS = re.compile(r"^/console/?$|^/console/static/[a-z]+\.(?:js|css)$")


@dataclass(frozen=True)
class Principal:
    """Who called: the tenant every query is scoped by, the subject for the record,
    and the role inside the tenant (``admin``, ``member``, ``reader``)."""

    tenant: str
    subject: str
    role: str = Role.MEMBER.value


class TokenTable:
    """The configured token digests, each with its principal."""

    def __init__(self, entries: list[tuple[str, Principal]]) -> None:
        self._entries = entries

    @classmethod
    def parse(cls, raw: str) -> TokenTable:
        """Parse ``TURNKEEP_TOKENS``. ValueError for a malformed table (never echoes it)."""
        if not raw.strip():
            return cls([])
        try:
            items = json.loads(raw)
        except json.JSONDecodeError:
            raise ValueError("TURNKEEP_TOKENS is not valid JSON") from None
        if not isinstance(items, list):
            raise ValueError("TURNKEEP_TOKENS must be a JSON list")
        entries: list[tuple[str, Principal]] = []
        for i, item in enumerate(items):
            if not isinstance(item, dict):
                raise ValueError(f"TURNKEEP_TOKENS[{i}] must be an object")
            digest = str(item.get("sha256", "")).lower()
            tenant = item.get("tenant")
            subject = item.get("subject")
            if not _HEX.fullmatch(digest):
                raise ValueError(f"TURNKEEP_TOKENS[{i}].sha256 must be 64 hex digits")
            if not isinstance(tenant, str) or not ID_PATTERN.fullmatch(tenant):
                raise ValueError(f"TURNKEEP_TOKENS[{i}].tenant must match {ID_PATTERN.pattern}")
            if not isinstance(subject, str) or not SUBJECT_PATTERN.fullmatch(subject):
                raise ValueError(
                    f"TURNKEEP_TOKENS[{i}].subject must match {SUBJECT_PATTERN.pattern}"
                )
            role = item.get("role", Role.MEMBER.value)
            if role not in {r.value for r in Role}:
                raise ValueError(f"TURNKEEP_TOKENS[{i}].role must be admin, member or reader")
            principal = Principal(tenant=tenant, subject=subject, role=role)
            if any(d == digest and p != principal for d, p in entries):
                raise ValueError(
                    f"TURNKEEP_TOKENS[{i}].sha256 is listed before for another principal"
                )
            entries.append((digest, principal))
        return cls(entries)

    @property
    def configured(self) -> bool:
        return bool(self._entries)

    def lookup(self, token: str) -> Principal | None:
        """The principal of a presented token, or None. Compares against every entry."""
        presented = hashlib.sha256(token.encode("utf-8")).hexdigest()
        found: Principal | None = None
        for digest, principal in self._entries:
            if hmac.compare_digest(presented, digest):
                found = principal
        return found


def token_digest(token: str) -> str:
    """The ``sha256`` value to configure for a token."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def _unauthorized() -> Problem:
    return Problem(
        401,
        "unauthorized",
        "a valid bearer token is required",
        headers={"WWW-Authenticate": "Bearer"},
    )


def authenticate(table: TokenTable, authorization: str) -> Principal:
    """The principal of an ``Authorization`` header value, or a 503/401 problem."""
    if not table.configured:
        raise Problem(503, "auth_not_configured", "no API tokens are configured")
    scheme, _, token = authorization.partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        raise _unauthorized()
    principal = table.lookup(token)
    if principal is None:
        raise _unauthorized()
    return principal


class UrlCredentials(Protocol):
    """A credential a request may carry in its URL instead of the header, on the paths
    it opens (``api.stream_tokens.StreamTokens``)."""

    def authenticate(self, method: str, path: str, query: bytes) -> Principal | None:
        """The principal it stands for; None when the request presents none; a
        ``Problem`` when it presents a bad one."""
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
        except Problem as problem:
            await problem.response()(scope, receive, send)
            return
        scope.setdefault("state", {})["principal"] = principal
        await self.app(scope, receive, send)


def principal_of(conn: HTTPConnection) -> Principal:
    """Who called: set by ``Authenticate`` for every non-public path."""
    principal = conn.scope["state"]["principal"]
    assert isinstance(principal, Principal)
    return principal
