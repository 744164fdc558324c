"""The webhook wire format (runtime/webhooks.py): signature, body, URL rule, backoff."""

from __future__ import annotations

import hashlib
import hmac
import json

import pytest

from turnkeep.runtime import webhooks


def test_the_signature_is_hmac_sha256_of_time_dot_body_and_verifies():
    payload = b'{"delivery_id":"dlv_1"}'
    header = webhooks.sign("s3cret", payload, at=1_700_000_000)
    t, v1 = header.split(",")
    assert t == "t=1700000000"
    expected = hmac.new(b"s3cret", b"1700000000." + payload, hashlib.sha256).hexdigest()
    assert v1 == f"v1={expected}"
    assert webhooks.verify("s3cret", payload, header, now=1_700_000_010)


@pytest.mark.parametrize(
    "case",
    ["other secret", "other body", "too old", "no time", "two times", "garbage"],
)
def test_verify_refuses(case: str):
    payload = b"{}"
    header = webhooks.sign("s3cret", payload, at=1_700_000_000)
    secret, body, now = "s3cret", payload, 1_700_000_000.0
    if case == "other secret":
        secret = "other"
    elif case == "other body":
        body = b'{"a":1}'
    elif case == "too old":
        now += webhooks.TOLERANCE + 1
    elif case == "no time":
        header = header.split(",")[1]
    elif case == "two times":
        header = "t=1700000000,t=1700000001," + header.split(",")[1]
    else:
        header = "nonsense"
    assert not webhooks.verify(secret, body, header, now=now)


def test_the_body_is_compact_tenant_free_json_in_a_fixed_order():
    raw = webhooks.body(
        delivery_id="dlv_1",
        run_id="r",
        node_id="n",
        session_id="wf-x",
        turn_id="node-x",
        state="completed",
        result={"text": "é"},
        error=None,
    )
    assert list(json.loads(raw)) == [
        "delivery_id",
        "run_id",
        "node_id",
        "session_id",
        "turn_id",
        "state",
        "result",
        "error",
    ]
    assert b" " not in raw and "é".encode() in raw


@pytest.mark.parametrize(
    "url",
    [
        "ftp://h/x",
        "file:///etc/passwd",
        "javascript:alert(1)",
        "/relative",
        "http://",
        "https://u:p@h/",
    ],
)
def test_only_absolute_http_urls_without_credentials(url: str):
    with pytest.raises(ValueError):
        webhooks.check_url(url)


def test_http_and_https_urls_pass():
    assert (
        webhooks.check_url("https://hooks.example.com/x?y=1") == "https://hooks.example.com/x?y=1"
    )
    assert webhooks.check_url("http://127.0.0.1:8080/") == "http://127.0.0.1:8080/"


def test_backoff_doubles_with_jitter_and_is_capped():
    for attempts, base in ((1, 5.0), (2, 10.0), (3, 20.0)):
        d = webhooks.retry_delay(attempts, base=5.0, cap=3600.0)
        assert 0.8 * base <= d <= 1.2 * base
    assert webhooks.retry_delay(40, base=5.0, cap=60.0) <= 60.0
    assert webhooks.retry_delay(10_000, base=5.0, cap=60.0) <= 60.0


def test_delivery_ids_are_new_and_secret_ids_stable_and_not_the_secret():
    assert webhooks.new_delivery_id() != webhooks.new_delivery_id()
    assert webhooks.secret_id("a") == webhooks.secret_id("a") != webhooks.secret_id("b")
    assert "a" * 3 not in webhooks.secret_id("aaa")


def test_without_a_secret_nothing_is_claimed_and_the_beat_says_so_rarely(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    from turnkeep.worker import webhooks as delivery

    class Untouchable:
        def __getattr__(self, name: str) -> object:
            raise AssertionError(f"the store was used: {name}")

    config = delivery.DeliveryConfig(
        secret="", timeout=1, lease=1, backoff=1, backoff_max=1, batch=10
    )
    clock = [1000.0]
    monkeypatch.setattr(delivery.time, "monotonic", lambda: clock[0])
    monkeypatch.setattr(delivery, "_said_at", None)
    store = Untouchable()
    with caplog.at_level("ERROR", logger="turnkeep.worker.webhooks"):
        for _ in range(5):
            assert delivery.deliver_due(store, config) == delivery.DeliveryReport()  # type: ignore[arg-type]
        clock[0] += delivery.QUIET_FOR
        delivery.deliver_due(store, config)  # type: ignore[arg-type]
        delivery.deliver_turn(store, config, "t", "s", "u")  # type: ignore[arg-type]
    said = [r.getMessage() for r in caplog.records]
    assert said == [
        "TURNKEEP_WEBHOOK_SECRET is not set: no webhook is delivered until it is",
        "TURNKEEP_WEBHOOK_SECRET is not set: no webhook is delivered until it is",
        "a webhook is due but TURNKEEP_WEBHOOK_SECRET is not set: not delivered",
    ]


def test_a_callback_host_that_is_not_public_is_refused() -> None:
    from turnkeep.runtime.webhooks import private_target

    for url in (
        "http://127.0.0.1:8080/hook",
        "http://localhost/hook",
        "http://10.1.2.3/hook",
        "http://192.168.0.9/hook",
        "http://169.254.169.254/latest/meta-data",
        "http://100.64.0.1/hook",
        "http://[::1]/hook",
        "http://[fd00::1]/hook",
        "http://0.0.0.0/hook",
    ):
        assert private_target(url) == "private_address", url
    assert private_target("https://93.184.216.34/hook") is None  # a public literal
    assert private_target("https://no-such-host.invalid/hook") == "unresolvable"
