"""Stream tokens: a short-lived signed credential to follow one session's events from a
browser, whose EventSource cannot send an ``Authorization`` header. The long-lived
bearer token never goes in a URL.

``POST /v1/sessions/{sid}/stream-tokens`` (bearer auth) answers
``{"token", "expires_at"}``; ``GET /v1/sessions/{sid}/events?stream_token=<token>``
accepts it instead of the header: on that path only, for GET only, for that session
only (``Authenticate`` hands the request to ``StreamTokens.authenticate`` when it has no
``Authorization`` header). A token is bound to the tenant, the subject (and role) that
asked for it and the session, and expires after ``TURNKEEP_STREAM_TOKEN_TTL`` seconds
(at most 600). Expired, tampered, malformed or another session's: 401. No other query
parameter is ever read as a credential, so a bearer token passed as ``?stream_token=``,
``?token=`` or ``?access_token=`` is refused like any wrong token.

Format: ``tkst1.<payload>.<mac>``, both base64url without padding; the payload is the
canonical JSON ``{"exp", "rol", "sid", "sub", "ten"}`` (``exp`` in Unix seconds), the
MAC is HMAC-SHA256 over ``tkst1.<payload>``. Its key is derived, never the configured
secret itself: HMAC-SHA256(secret, ``turnkeep.stream-token.v1``), where the secret is
``TURNKEEP_STREAM_TOKEN_SECRET`` or, unset, ``TURNKEEP_WEBHOOK_SECRET`` (the label keeps
the two uses apart). Neither set: issuing and presenting a stream token answer 503
``stream_tokens_not_configured``. Every API process of a deployment must share the
secret. Tokens are stateless: one stays valid until it expires, even if its bearer
token is removed from ``TURNKEEP_TOKENS`` meanwhile (hence the 10-minute cap).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import re
import time
from datetime import UTC, datetime
from typing import Annotated, Any
from urllib.parse import parse_qs

from fastapi import APIRouter, Path, Request
from fastapi.responses import JSONResponse

from turnkeep.api import openapi as doc
from turnkeep.api.auth import ID_PATTERN, SUBJECT_PATTERN, Principal, principal_of
from turnkeep.api.errors import StreamTokenRefused, StreamTokensNotConfigured
from turnkeep.api.resources import services_of
from turnkeep.api.service import access
from turnkeep.api.service.requests import ID_REGEX
from turnkeep.models import StreamToken
from turnkeep.runtime.hashing import canonical_json
from turnkeep.runtime.settings import Settings
from turnkeep.runtime.tokens import TenantRole

PREFIX = "tkst1"
#: the longest lifetime a token may have, whatever the settings say
MAX_TTL = 600.0
#: the query parameter the events route accepts a stream token in
PARAM = "stream_token"
_LABEL = b"turnkeep.stream-token.v1"
#: the one path a stream token opens
_EVENTS_PATH = re.compile(r"^/v1/sessions/([A-Za-z0-9._-]{1,128})/events$")
_PART = re.compile(r"^[A-Za-z0-9_-]+$")


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    if not _PART.fullmatch(text):
        raise ValueError("not base64url")
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class StreamTokens:
    """Issues and checks stream tokens under one derived key (None: not configured)."""

    def __init__(self, key: bytes | None, *, ttl: float) -> None:
        self._key = key
        self.ttl = min(ttl, MAX_TTL)

    @classmethod
    def from_settings(cls, settings: Settings) -> StreamTokens:
        secret = (
            settings.auth.stream_token_secret.get_secret_value()
            or settings.webhooks.secret.get_secret_value()
        )
        key = hmac.new(secret.encode(), _LABEL, hashlib.sha256).digest() if secret else None
        return cls(key, ttl=settings.auth.stream_token_ttl)

    @property
    def configured(self) -> bool:
        return self._key is not None

    def _mac(self, signed: str) -> bytes:
        assert self._key is not None
        return hmac.new(self._key, signed.encode("ascii"), hashlib.sha256).digest()

    def issue(
        self, principal: Principal, session_id: str, *, now: float | None = None
    ) -> tuple[str, datetime]:
        """A token for ``principal`` to follow ``session_id``, and when it expires."""
        if self._key is None:
            raise StreamTokensNotConfigured()
        exp = int((time.time() if now is None else now) + self.ttl)
        claims = {
            "exp": exp,
            "rol": principal.role,
            "sid": session_id,
            "sub": principal.subject,
            "ten": principal.tenant,
        }
        signed = f"{PREFIX}.{_b64(canonical_json(claims).encode('utf-8'))}"
        return f"{signed}.{_b64(self._mac(signed))}", datetime.fromtimestamp(exp, UTC)

    def verify(self, token: str, session_id: str, *, now: float | None = None) -> Principal:
        """The principal a valid, unexpired token of ``session_id`` stands for; a 401
        problem for anything else (503 when not configured)."""
        if self._key is None:
            raise StreamTokensNotConfigured()
        prefix, _, rest = token.partition(".")
        payload, _, mac = rest.partition(".")
        if prefix != PREFIX or not payload or not mac:
            raise StreamTokenRefused()
        try:
            presented = _unb64(mac)
            claims = (
                json.loads(_unb64(payload)) if self._signed(prefix, payload, presented) else None
            )
        except (ValueError, binascii.Error, UnicodeDecodeError):
            raise StreamTokenRefused() from None
        principal = _principal(claims, session_id, time.time() if now is None else now)
        if principal is None:
            raise StreamTokenRefused()
        return principal

    def _signed(self, prefix: str, payload: str, presented: bytes) -> bool:
        return hmac.compare_digest(self._mac(f"{prefix}.{payload}"), presented)

    def authenticate(self, method: str, path: str, query: bytes) -> Principal | None:
        """``Authenticate``'s hook for a request without an ``Authorization`` header:
        the principal of a ``?stream_token=`` on GET of a session's events, None when
        the request presents none there (the bearer check then answers), a problem when
        it presents a bad one."""
        match = _EVENTS_PATH.fullmatch(path)
        if method != "GET" or match is None:
            return None
        values = parse_qs(query.decode("latin-1"), keep_blank_values=True).get(PARAM)
        if not values:
            return None
        if len(values) != 1:
            raise StreamTokenRefused()
        return self.verify(values[0], match.group(1))


def _principal(claims: Any, session_id: str, now: float) -> Principal | None:
    """The token's principal when its claims are well formed, for ``session_id`` and
    unexpired; None otherwise."""
    if not isinstance(claims, dict):
        return None
    exp, sid = claims.get("exp"), claims.get("sid")
    tenant, subject, role = claims.get("ten"), claims.get("sub"), claims.get("rol")
    if not isinstance(exp, int) or not now < exp <= now + MAX_TTL + 5:
        return None
    if sid != session_id:
        return None
    if not isinstance(tenant, str) or not ID_PATTERN.fullmatch(tenant):
        return None
    if not isinstance(subject, str) or not SUBJECT_PATTERN.fullmatch(subject):
        return None
    if role not in {r.value for r in TenantRole}:
        return None
    return Principal(tenant=tenant, subject=subject, role=role)


# -- the route ------------------------------------------------------------------------

router = APIRouter()

SessionId = Annotated[str, Path(pattern=ID_REGEX)]


def stream_tokens_of(request: Request) -> StreamTokens:
    tokens: StreamTokens = request.app.state.stream_tokens
    return tokens


_NO_STORE = {"Cache-Control": {"required": True, "schema": {"type": "string", "const": "no-store"}}}


@router.post(
    "/v1/sessions/{sid}/stream-tokens",
    responses={200: doc.body(StreamToken, "The token", headers=_NO_STORE), **doc.problems(404)},
)
async def issue_stream_token(request: Request, sid: SessionId) -> JSONResponse:
    """A token to follow this session's events with ``?stream_token=`` (404 for a
    session this tenant does not have, or another owner's project has)."""
    tokens = stream_tokens_of(request)
    if not tokens.configured:
        raise StreamTokensNotConfigured()
    services, principal = services_of(request), principal_of(request)
    await services.run(access.visible, services, principal, sid)
    token, expires = tokens.issue(principal, sid)
    return JSONResponse(
        {"token": token, "expires_at": expires.isoformat()},
        headers={"Cache-Control": "no-store"},
    )
