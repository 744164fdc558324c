"""Stream tokens (api/stream_tokens.py): bound to tenant, subject and session, short-
lived, signed under a key derived from the configured secret; only ever read from the
events path's ``?stream_token=``."""

from __future__ import annotations

import base64
import json

import pytest

from turnkeep.api.auth import Principal
from turnkeep.api.errors import ServiceError
from turnkeep.api.stream_tokens import MAX_TTL, StreamTokens
from turnkeep.runtime.settings import Settings

ALICE = Principal(tenant="tA", subject="alice", role="member")
NOW = 1_700_000_000.0


def tokens(**kw: object) -> StreamTokens:
    return StreamTokens.from_settings(Settings(auth={"stream_token_secret": "k" * 32, **kw}))


def _status(fn, *args, **kw) -> int:
    with pytest.raises(ServiceError) as info:
        fn(*args, **kw)
    return info.value.status


def test_a_token_stands_for_its_principal_on_its_session_until_it_expires():
    st = tokens(stream_token_ttl=120)
    token, expires = st.issue(ALICE, "s-1", now=NOW)
    assert expires.timestamp() == NOW + 120
    assert st.verify(token, "s-1", now=NOW + 119) == ALICE
    assert _status(st.verify, token, "s-1", now=NOW + 120) == 401  # expired
    assert _status(st.verify, token, "s-2", now=NOW) == 401  # another session


def test_tampered_or_foreign_tokens_are_refused():
    st = tokens()
    token, _ = st.issue(ALICE, "s-1", now=NOW)
    prefix, payload, mac = token.split(".")
    claims = json.loads(base64.urlsafe_b64decode(payload + "=="))
    claims["ten"] = "tB"
    forged = base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=").decode()
    for bad in (
        f"{prefix}.{forged}.{mac}",  # another tenant, old MAC
        f"{prefix}.{payload}.{mac[:-2]}AA",  # MAC changed
        token + "x",
        "tkst2." + token.split(".", 1)[1],
        "Bearer-looking-secret-a-123",
        "",
        "tkst1..",
        "tkst1.!!.??",
    ):
        assert _status(st.verify, bad, "s-1", now=NOW) == 401, bad
    # another deployment's key
    other = StreamTokens.from_settings(Settings(auth={"stream_token_secret": "z" * 32}))
    assert _status(other.verify, token, "s-1", now=NOW) == 401


def test_the_key_is_derived_from_the_webhook_secret_when_no_stream_secret_is_set():
    a = StreamTokens.from_settings(Settings(webhooks={"secret": "w" * 32}))
    b = StreamTokens.from_settings(Settings(webhooks={"secret": "w" * 32}))
    token, _ = a.issue(ALICE, "s-1", now=NOW)
    assert b.verify(token, "s-1", now=NOW) == ALICE
    # one derivation, whichever setting holds the secret
    c = StreamTokens.from_settings(Settings(auth={"stream_token_secret": "w" * 32}))
    assert c.verify(token, "s-1", now=NOW) == ALICE


def test_no_secret_configured_is_503_both_ways():
    st = StreamTokens.from_settings(Settings())
    assert not st.configured
    assert _status(st.issue, ALICE, "s-1") == 503
    assert _status(st.verify, "tkst1.a.b", "s-1") == 503


def test_the_lifetime_is_at_most_ten_minutes():
    with pytest.raises(ValueError):
        Settings(auth={"stream_token_ttl": 601})
    assert StreamTokens(b"k", ttl=10_000).ttl == MAX_TTL


def test_only_get_of_a_sessions_events_reads_the_query_parameter():
    st = tokens()
    token, _ = st.issue(ALICE, "s-1")
    q = f"stream_token={token}".encode()
    assert st.authenticate("GET", "/v1/sessions/s-1/events", q) == ALICE
    assert st.authenticate("GET", "/v1/sessions/s-1/events", b"after=3&" + q) == ALICE
    # no token there: the bearer check decides
    assert st.authenticate("GET", "/v1/sessions/s-1/events", b"after=3") is None
    assert st.authenticate("GET", "/v1/sessions/s-1/events", f"token={token}".encode()) is None
    # other paths and methods never read it
    assert st.authenticate("POST", "/v1/sessions/s-1/events", q) is None
    assert st.authenticate("GET", "/v1/sessions/s-1", q) is None
    assert st.authenticate("GET", "/v1/sessions/s-1/turns/t/events", q) is None
    # another session's path, or two tokens: refused
    assert _status(st.authenticate, "GET", "/v1/sessions/s-2/events", q) == 401
    assert _status(st.authenticate, "GET", "/v1/sessions/s-1/events", q + b"&" + q) == 401
