"""The token table: digests only, fails closed, never echoes a token."""

from __future__ import annotations

import json

import pytest

from turnkeep.api.auth import Principal, TokenTable, token_digest


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

    from turnkeep.api.auth import Authenticate, TokenTable

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


@pytest.mark.parametrize(
    "subject",
    ["alice:admin", "alice admin", "alice\n", "al\x00ice", "\u00e9ve", "a" * 129, "a/b", 7],
)
def test_a_subject_that_could_pass_for_another_is_refused(subject: object) -> None:
    raw = json.dumps([{"sha256": "0" * 64, "tenant": "t", "subject": subject}])
    with pytest.raises(ValueError, match="subject must match"):
        TokenTable.parse(raw)


def test_subjects_may_be_ids_or_mail_addresses() -> None:
    for subject in ("ci", "svc.deploy-2", "ops+oncall@example.com"):
        t = table({"sha256": token_digest("s"), "tenant": "t", "subject": subject})
        assert t.lookup("s") == Principal("t", subject)


def test_two_tokens_of_one_principal_are_valid_at_once_for_rotation() -> None:
    old, new = token_digest("old-secret"), token_digest("new-secret")
    t = table(
        {"sha256": old, "tenant": "acme", "subject": "ci", "role": "admin"},
        {"sha256": new, "tenant": "acme", "subject": "ci", "role": "admin"},
    )
    assert t.lookup("old-secret") == t.lookup("new-secret") == Principal("acme", "ci", "admin")
    # the old one removed: the new one alone still stands
    rotated = table({"sha256": new, "tenant": "acme", "subject": "ci", "role": "admin"})
    assert rotated.lookup("old-secret") is None
    assert rotated.lookup("new-secret") == Principal("acme", "ci", "admin")


def test_one_digest_for_two_principals_is_refused() -> None:
    digest = token_digest("shared")
    same = {"sha256": digest, "tenant": "acme", "subject": "ci"}
    assert table(same, same).lookup("shared") == Principal("acme", "ci")  # a repeat is harmless
    with pytest.raises(ValueError, match="another principal"):
        table(same, {**same, "subject": "ops"})


def test_a_subjects_role_is_the_highest_any_token_gives_it_in_that_tenant() -> None:
    """What a schedule's tick looks its creator up with (store/admission.py)."""
    t = table(
        {"sha256": token_digest("a"), "tenant": "acme", "subject": "ci", "role": "reader"},
        {"sha256": token_digest("b"), "tenant": "acme", "subject": "ci", "role": "admin"},
        {"sha256": token_digest("c"), "tenant": "acme", "subject": "ro", "role": "reader"},
        {"sha256": token_digest("d"), "tenant": "globex", "subject": "ops"},
    )
    assert t.role_of("acme", "ci") == "admin"
    assert t.role_of("acme", "ro") == "reader"
    assert t.role_of("globex", "ops") == "member"
    assert t.role_of("acme", "ops") is None  # another tenant's subject is no one here
    assert t.role_of("acme", "gone") is None
