"""The token table: digests only, fails closed, never echoes a token."""

from __future__ import annotations

import json

import pytest

from api.auth import Principal, TokenTable, token_digest


def table(*entries: dict[str, str]) -> TokenTable:
    return TokenTable.parse(json.dumps(list(entries)))


def test_lookup_by_digest() -> None:
    t = table(
        {"sha256": token_digest("s3cret"), "tenant": "acme", "subject": "ci"},
        {"sha256": token_digest("other"), "tenant": "globex", "subject": "ops"},
    )
    assert t.configured
    assert t.lookup("s3cret") == Principal("acme", "ci")
    assert t.lookup("other") == Principal("globex", "ops")
    assert t.lookup("s3cret ") is None
    assert t.lookup(token_digest("s3cret")) is None  # the digest itself is not a token


@pytest.mark.parametrize("raw", ["", "  ", "[]"])
def test_empty_is_not_configured(raw: str) -> None:
    assert not TokenTable.parse(raw).configured


@pytest.mark.parametrize(
    "raw",
    [
        "not json",
        '{"sha256": "x"}',
        json.dumps([{"sha256": "abc", "tenant": "t", "subject": "s"}]),
        json.dumps([{"sha256": "0" * 64, "tenant": "a:b", "subject": "s"}]),
        json.dumps([{"sha256": "0" * 64, "tenant": "t", "subject": ""}]),
        json.dumps(["token"]),
    ],
)
def test_malformed_tables_are_refused(raw: str) -> None:
    with pytest.raises(ValueError) as info:
        TokenTable.parse(raw)
    assert raw not in str(info.value) or raw == ""


def test_the_auth_middleware_refuses_websockets_it_cannot_authenticate():
    import asyncio

    from api.auth import Authenticate, TokenTable

    reached = []

    async def app(scope, receive, send):
        reached.append(scope["type"])

    sent = []

    async def send(message):
        sent.append(message)

    async def receive():
        return {"type": "websocket.connect"}

    mw = Authenticate(app, tokens=lambda: TokenTable([]), public={"/healthz"})
    asyncio.run(mw({"type": "websocket", "path": "/healthz", "headers": []}, receive, send))
    assert reached == [] and sent == [{"type": "websocket.close", "code": 1008}]
    asyncio.run(mw({"type": "lifespan"}, receive, send))
    assert reached == ["lifespan"]
