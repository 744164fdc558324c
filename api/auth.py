"""Bearer tokens and the tenant they stand for. Fails closed.

``TURNKEEP_TOKENS`` is a JSON list of ``{"sha256": hex, "tenant": str, "subject": str,
"role": "admin" | "member" | "reader"}`` (role optional, ``member`` by default):
only the SHA-256 of each token is configured, never the token. A request presents
``Authorization: Bearer <token>``; its digest is compared with every configured one
by ``hmac.compare_digest``. No token configured answers 503, a missing or wrong one
401. The resulting ``Principal`` scopes every store query by its tenant.

``Authenticate`` (pure ASGI middleware) checks every request before routing, except
those to the few public paths (liveness, readiness, the API's documentation): a route
added later is protected without having to ask for it. Routes read the principal with
``principal_of(request)``.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
from collections.abc import Callable, Collection
from dataclasses import dataclass

from starlette.requests import HTTPConnection
from starlette.types import ASGIApp, Receive, Scope, Send

from api.problems import Problem
from runtime.inputs import Role

#: tenant ids end up in Redis keys (store/keys.py): no ``:`` allowed
ID_PATTERN = re.compile(r"^[A-Za-z0-9._-]{1,128}$")
_HEX = re.compile(r"^[0-9a-f]{64}$")


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
            if not isinstance(subject, str) or not subject:
                raise ValueError(f"TURNKEEP_TOKENS[{i}].subject must be a non-empty string")
            role = item.get("role", Role.MEMBER.value)
            if role not in {r.value for r in Role}:
                raise ValueError(f"TURNKEEP_TOKENS[{i}].role must be admin, member or reader")
            entries.append((digest, Principal(tenant=tenant, subject=subject, role=role)))
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


class Authenticate:
    """Pure ASGI middleware: the caller's principal into the request's state, or a
    503/401 problem before anything else runs. ``tokens`` is read per request (the
    table lives on the app, built at start-up); ``public`` paths need no token."""

    def __init__(
        self, app: ASGIApp, *, tokens: Callable[[], TokenTable], public: Collection[str]
    ) -> None:
        self.app = app
        self.tokens = tokens
        self.public = frozenset(public)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket":
            # none is served; fail closed should one ever be mounted without auth
            await send({"type": "websocket.close", "code": 1008})
            return
        if scope["type"] != "http" or scope["path"] in self.public:
            await self.app(scope, receive, send)
            return
        authorization = b""
        for name, value in scope["headers"]:
            if name == b"authorization":
                authorization = value
                break
        try:
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
