"""The chat bridges' pure parts: Slack's v0 signature and its replay window, which
events admit a turn and which are ignored by rule, the ids a thread and a message
derive, a button press's payload, the generic bridge's signed body, and what a
settled turn says in its thread."""

from __future__ import annotations

import json
import time
from urllib.parse import urlencode

from turnkeep.runtime import webhooks
from turnkeep.runtime.bridges import (
    GENERIC,
    SLACK,
    InboundMessage,
    Thread,
    generic,
    reply_text,
    session_id,
    slack,
)
from turnkeep.runtime.bridges.slack import ButtonPress, Challenge, Ignored

SECRET = "8f742231b10e8888abcd99yyyzzz85a5"


def _event(**event: object) -> bytes:
    body = {
        "type": "event_callback",
        "team_id": "T1",
        "event_id": "Ev1",
        "event": {"type": "app_mention", "user": "U1", "channel": "C1", "ts": "10.1", **event},
    }
    return json.dumps(body).encode()


def test_slacks_own_example_signature_verifies():
    # the worked example of Slack's "Verifying requests from Slack" page
    body = (
        b"token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&"
        b"channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&"
        b"command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2F"
        b"commands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&"
        b"trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c"
    )
    expected = "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503"
    assert slack.signature(SECRET, "1531420618", body) == expected
    assert slack.verify(SECRET, "1531420618", body, expected, now=1531420618 + 10)


def test_a_wrong_stale_or_missing_signature_does_not_verify():
    now = time.time()
    ts = str(int(now))
    body = _event(text="<@B1> hi")
    good = slack.signature(SECRET, ts, body)
    assert slack.verify(SECRET, ts, body, good, now=now)
    assert not slack.verify(SECRET, ts, body + b" ", good, now=now)  # body changed
    assert not slack.verify("other", ts, body, good, now=now)  # another secret
    assert not slack.verify(SECRET, ts, body, good, now=now + 301)  # replayed later
    assert not slack.verify(SECRET, ts, body, good, now=now - 301)  # from the future
    assert not slack.verify(SECRET, None, body, good, now=now)
    assert not slack.verify(SECRET, ts, body, None, now=now)
    assert not slack.verify(SECRET, "12a", body, good, now=now)
    assert not slack.verify("", ts, body, slack.signature("", ts, body), now=now)


def test_a_mention_is_a_message_of_its_thread_with_the_mention_stripped():
    parsed = slack.parse_event(_event(text="<@B1> what is 2+2?"))
    assert parsed == InboundMessage(
        bridge=SLACK,
        thread=Thread("T1", "C1", "10.1"),  # a top-level mention starts its thread
        user="U1",
        message_id="C1:10.1",
        text="what is 2+2?",
        addressed=True,
    )
    in_thread = slack.parse_event(_event(text="<@B1> again", ts="10.5", thread_ts="10.1"))
    assert isinstance(in_thread, InboundMessage)
    assert in_thread.thread == Thread("T1", "C1", "10.1")
    assert in_thread.session_id == parsed.session_id  # type: ignore[union-attr]
    assert in_thread.turn_id != parsed.turn_id  # type: ignore[union-attr]


def test_the_message_event_beside_a_mention_derives_the_same_turn():
    mention = slack.parse_event(_event(text="<@B1> hi", ts="10.5", thread_ts="10.1"))
    message = slack.parse_event(
        _event(type="message", text="<@B1> hi", ts="10.5", thread_ts="10.1")
    )
    assert isinstance(mention, InboundMessage) and isinstance(message, InboundMessage)
    assert (mention.session_id, mention.turn_id) == (message.session_id, message.turn_id)


def test_bots_edits_and_strays_are_ignored_by_rule():
    cases = {
        "bot": _event(text="hi", bot_id="B9"),
        "edit": _event(type="message", subtype="message_changed", thread_ts="10.0"),
        "deleted": _event(type="message", subtype="message_deleted", thread_ts="10.0"),
        "outside a thread": _event(type="message", text="hello"),
        "thread parent": _event(type="message", text="hello", thread_ts="10.1"),
        "a reaction": _event(type="reaction_added"),
        "empty": _event(text="<@B1>"),
    }
    for why, body in cases.items():
        assert isinstance(slack.parse_event(body), Ignored), why
    assert isinstance(slack.parse_event(b"not json"), Ignored)
    assert slack.parse_event(b'{"type":"url_verification","challenge":"c-1"}') == Challenge("c-1")


def test_a_nul_is_dropped_from_the_text():
    parsed = slack.parse_event(_event(text="<@B1> a\u0000b"))
    assert isinstance(parsed, InboundMessage) and parsed.text == "ab"


def test_a_thread_message_without_a_mention_continues_the_thread_only():
    parsed = slack.parse_event(_event(type="message", text="and then?", ts="11", thread_ts="10"))
    assert isinstance(parsed, InboundMessage)
    assert not parsed.addressed and parsed.text == "and then?"


def test_ids_follow_the_id_rule_whatever_the_provider_names():
    import re

    from turnkeep.api.service.requests import ID_REGEX

    sid = session_id(GENERIC, "a workspace/with:odd chars", "#chan nel", "th\u00e9")
    assert re.fullmatch(ID_REGEX, sid)
    # the parts are kept apart: moving a character from one to the next is another id
    assert session_id(GENERIC, "ab", "c", "d") != session_id(GENERIC, "a", "bc", "d")
    assert session_id(GENERIC, "a", "bc", "d") != session_id(GENERIC, "a", "b", "cd")
    assert session_id(SLACK, "T1", "C1", "1") != session_id(GENERIC, "T1", "C1", "1")
    # Slack's ts is unique within a channel only: one ts in two channels, two threads
    assert session_id(SLACK, "T1", "C1", "1.0") != session_id(SLACK, "T1", "C2", "1.0")


def test_a_button_press_names_its_request_and_direction():
    value = slack.button_value("slack.s", "slack.t", "approval-3-0")
    payload = {
        "type": "block_actions",
        "user": {"id": "U1"},
        "team": {"id": "T1"},
        "channel": {"id": "C1"},
        "actions": [{"action_id": slack.DENY, "value": value}],
    }
    body = urlencode({"payload": json.dumps(payload)}).encode()
    assert slack.parse_action(body) == ButtonPress(
        "T1", "C1", "U1", "slack.s", "slack.t", "approval-3-0", approved=False
    )
    payload["actions"] = [{"action_id": "someone_elses", "value": value}]
    assert isinstance(
        slack.parse_action(urlencode({"payload": json.dumps(payload)}).encode()), Ignored
    )
    assert isinstance(slack.parse_action(b"payload=nope"), Ignored)


def test_the_reply_carries_its_delivery_id_as_metadata_found_by_a_retry():
    body = slack.reply_body(Thread("T1", "C1", "10.1"), "4", "dlv_1")
    assert body["channel"] == "C1" and body["thread_ts"] == "10.1" and body["text"] == "4"
    replies = {"ok": True, "messages": [{"text": "q"}, {"text": "4", "metadata": body["metadata"]}]}
    assert slack.posted_keys(replies) == {"dlv_1"}
    assert slack.posted_keys({"ok": True, "messages": [{"metadata": {"event_type": "x"}}]}) == set()


def test_what_a_settled_turn_says():
    assert reply_text("completed", {"text": "hello"}, None) == "hello"
    assert reply_text("completed", {"text": "", "output": {"n": 1}}, None) == '{"n": 1}'
    assert reply_text("failed", None, {"code": "budget_exceeded", "message": "secret"}) == (
        "Sorry, this turn failed (budget_exceeded)."
    )
    assert reply_text("cancelled", None, None) == "This turn was cancelled."


def test_the_generic_bridge_verifies_turnkeeps_own_signature():
    body = json.dumps(
        {
            "workspace": "acme",
            "channel": "support",
            "thread": "th-1",
            "user": "u-7",
            "message_id": "m-1",
            "text": "hi",
        }
    ).encode()
    header = webhooks.sign("s3cret", body)
    assert generic.verify("s3cret", body, header)
    assert not generic.verify("other", body, header)
    assert not generic.verify("", body, webhooks.sign("", body))
    assert not generic.verify("s3cret", body, None)
    message = generic.parse(body)
    assert message is not None and message.addressed
    assert message.thread == Thread("acme", "support", "th-1")
    assert generic.parse(b'{"workspace": "acme"}') is None


def test_the_bridges_secrets_are_redacted_wherever_turnkeep_writes():
    from pydantic import SecretStr

    from turnkeep.runtime.obs.redact import Redactor
    from turnkeep.runtime.settings import Settings

    settings = Settings(
        slack={
            "signing_secret": SecretStr("slack-signing-0123456789"),
            "bot_token": SecretStr("bot-token-9876543210"),
        },
        bridge={"secret": SecretStr("bridge-secret-abcdef")},
    )
    redactor = Redactor.from_settings(settings, environ={})
    text = "slack-signing-0123456789 bot-token-9876543210 bridge-secret-abcdef"
    assert redactor.redact_text(text) == " ".join([redactor.marker] * 3)


def test_a_workspace_is_the_tenant_the_operator_assigned_it_to(monkeypatch):
    from turnkeep.runtime.bridges import tenant_of
    from turnkeep.runtime.settings import Settings

    monkeypatch.setenv("TURNKEEP_SLACK_WORKSPACES", '{"T1": "acme", "T2": "globex"}')
    monkeypatch.setenv("TURNKEEP_BRIDGE_TENANT", "acme")
    settings = Settings()
    assert tenant_of(settings, SLACK, "T1") == "acme"
    assert tenant_of(settings, SLACK, "T2") == "globex"
    assert tenant_of(settings, SLACK, "T3") is None  # assigned to nobody: nobody's
    # the generic secret is one tenant's, whatever workspace a message names
    assert tenant_of(settings, GENERIC, "anything") == "acme"
    assert tenant_of(Settings(bridge={"tenant": ""}), GENERIC, "anything") is None
    assert tenant_of(settings, "teams", "T1") is None
