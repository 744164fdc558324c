"""Slack's wire, pure: request signatures, the Events API's envelopes, interactive
button payloads, and the bodies turnkeep posts (docs/bridges.md).

Inbound (https://api.slack.com/authentication/verifying-requests-from-slack): every
request carries ``X-Slack-Request-Timestamp`` and ``X-Slack-Signature: v0=<hex>``, the
HMAC-SHA256 of ``v0:{timestamp}:{raw body}`` under the app's signing secret. A request
more than five minutes from our clock is refused, so a captured one cannot be played
again later; the compare is constant-time.

Outbound: ``chat.postMessage`` into the thread, with message ``metadata`` naming the
outbox row's delivery id. Slack's Web API takes no idempotency key on
``chat.postMessage``; the metadata is how a retry finds out whether an earlier attempt
was posted after all (``conversations.replies`` with ``include_all_metadata``), so a
reply is posted once even when the attempt that posted it died before it was recorded
(runtime/bridges/slack_api.py).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from turnkeep.runtime.bridges import SLACK, InboundMessage, Thread
from turnkeep.runtime.numerals import ascii_int

TIMESTAMP_HEADER = "X-Slack-Request-Timestamp"
SIGNATURE_HEADER = "X-Slack-Signature"
RETRY_HEADER = "X-Slack-Retry-Num"
#: seconds between a request's timestamp and our clock past which it is refused
TOLERANCE = 300.0
#: the message metadata type of turnkeep's replies (what a retry looks for)
METADATA_TYPE = "turnkeep_reply"
#: the ``action_id`` of the approval buttons, and their values
APPROVE, DENY = "turnkeep_approve", "turnkeep_deny"

_MENTION = re.compile(r"<@[A-Z0-9]+>")


def signature(secret: str, timestamp: str, body: bytes) -> str:
    """``X-Slack-Signature`` for ``body`` sent at ``timestamp`` (what Slack sends)."""
    base = b"v0:" + timestamp.encode() + b":" + body
    return "v0=" + hmac.new(secret.encode(), base, hashlib.sha256).hexdigest()


def verify(
    secret: str,
    timestamp: str | None,
    body: bytes,
    sent: str | None,
    *,
    now: float | None = None,
    tolerance: float = TOLERANCE,
) -> bool:
    """Whether ``sent`` signs ``body`` under ``secret`` at a ``timestamp`` within
    ``tolerance`` seconds of ``now``. An empty secret verifies nothing."""
    at = ascii_int(timestamp)
    if not secret or timestamp is None or at is None or not sent:
        return False
    if abs((time.time() if now is None else now) - at) > tolerance:
        return False
    return hmac.compare_digest(signature(secret, timestamp, body), sent)


class _Event(BaseModel):
    model_config = ConfigDict(extra="allow")

    type: str
    user: str | None = None
    text: str = ""
    ts: str | None = None
    channel: str | None = None
    thread_ts: str | None = None
    subtype: str | None = None
    bot_id: str | None = None


class _Envelope(BaseModel):
    model_config = ConfigDict(extra="allow")

    type: str
    challenge: str | None = None
    team_id: str | None = None
    event_id: str | None = None
    event: _Event | None = None


@dataclass(frozen=True)
class Challenge:
    """``url_verification``: Slack checks the URL by asking for its challenge back."""

    challenge: str


@dataclass(frozen=True)
class Ignored:
    """An event that admits nothing, and why (a bot's message, an edit, …)."""

    why: str


Parsed = Challenge | Ignored | InboundMessage


def parse_event(body: bytes) -> Parsed:
    """What a verified Events API request asks for. Bot messages (ours included, which
    Slack sends back as events), edits, deletions and every other subtype are ignored
    by rule, as is a ``message`` outside a thread (a mention starts a thread)."""
    try:
        envelope = _Envelope.model_validate_json(body)
    except ValidationError:
        return Ignored("malformed")
    if envelope.type == "url_verification" and envelope.challenge is not None:
        return Challenge(envelope.challenge)
    event = envelope.event
    if envelope.type != "event_callback" or event is None or envelope.team_id is None:
        return Ignored("not an event")
    if event.bot_id is not None or event.subtype is not None:
        return Ignored(f"subtype {event.subtype or 'bot_message'}")
    if event.type not in ("app_mention", "message"):
        return Ignored(f"event {event.type}")
    if event.user is None or event.ts is None or event.channel is None:
        return Ignored("no sender")
    mention = event.type == "app_mention"
    if not mention and (event.thread_ts is None or event.thread_ts == event.ts):
        return Ignored("not in a thread")
    # (Postgres stores no U+0000: a message holding one is taken without it)
    text = _MENTION.sub("", event.text).replace("\x00", "").strip()
    if not text:
        return Ignored("empty")
    return InboundMessage(
        bridge=SLACK,
        thread=Thread(envelope.team_id, event.channel, event.thread_ts or event.ts),
        user=event.user,
        # a message's identity is its channel and ts: a retry (the same event_id) and
        # the app_mention Slack sends beside the message event of one mention in a
        # thread (two event ids) derive the same turn, so either is a replay
        message_id=f"{event.channel}:{event.ts}",
        text=text,
        addressed=mention or _MENTION.search(event.text) is not None,
    )


class _Id(BaseModel):
    model_config = ConfigDict(extra="allow")

    id: str


class _Action(BaseModel):
    model_config = ConfigDict(extra="allow")

    action_id: str
    value: str = ""


class _Container(BaseModel):
    model_config = ConfigDict(extra="allow")

    channel_id: str | None = None
    thread_ts: str | None = None
    message_ts: str | None = None


class _BlockActions(BaseModel):
    model_config = ConfigDict(extra="allow")

    type: str
    user: _Id
    team: _Id
    channel: _Id | None = None
    container: _Container = Field(default_factory=_Container)
    actions: list[_Action] = Field(min_length=1)


@dataclass(frozen=True)
class ButtonPress:
    """A person pressed an approval button: who, where, on which request, which way."""

    team: str
    channel: str
    user: str
    #: the turn's session, the turn and the request, as the button's value names them
    session_id: str
    turn_id: str
    request_id: str
    approved: bool
    #: the prompt's message (to show the outcome in place of its buttons) and its thread
    message_ts: str | None = None
    thread_ts: str | None = None


def button_value(session_id: str, turn_id: str, request_id: str) -> str:
    """What a button carries back (Slack caps a value at 2,000 characters)."""
    return json.dumps({"s": session_id, "t": turn_id, "r": request_id}, separators=(",", ":"))


def parse_action(body: bytes) -> ButtonPress | Ignored:
    """A verified interactivity request (``payload=`` form field, JSON): an approval
    button's press, or ignored."""
    fields = parse_qs(body.decode("utf-8", "replace"))
    try:
        payload = _BlockActions.model_validate_json(fields.get("payload", [""])[0])
    except ValidationError:
        return Ignored("malformed")
    action = payload.actions[0]
    if payload.type != "block_actions" or action.action_id not in (APPROVE, DENY):
        return Ignored(f"action {action.action_id}")
    try:
        named = json.loads(action.value)
        session_id, turn_id, request_id = str(named["s"]), str(named["t"]), str(named["r"])
    except (ValueError, KeyError, TypeError):
        return Ignored("malformed value")
    channel = payload.channel.id if payload.channel else payload.container.channel_id
    if channel is None:
        return Ignored("no channel")
    return ButtonPress(
        team=payload.team.id,
        channel=channel,
        user=payload.user.id,
        session_id=session_id,
        turn_id=turn_id,
        request_id=request_id,
        approved=action.action_id == APPROVE,
        message_ts=payload.container.message_ts,
        thread_ts=payload.container.thread_ts,
    )


def metadata(delivery_id: str) -> dict[str, Any]:
    """The message metadata a reply carries: how a retry recognises it."""
    return {"event_type": METADATA_TYPE, "event_payload": {"delivery_id": delivery_id}}


def reply_body(thread: Thread, text: str, delivery_id: str) -> dict[str, Any]:
    """``chat.postMessage``'s body for a reply in ``thread``."""
    return {
        "channel": thread.channel,
        "thread_ts": thread.thread,
        "text": text,
        "metadata": metadata(delivery_id),
    }


def approval_body(
    thread: Thread, *, key: str, prompt: str, session_id: str, turn_id: str, request_id: str
) -> dict[str, Any]:
    """``chat.postMessage``'s body asking for an approval: the prompt and two buttons
    naming the request (``key``: the metadata a retry looks for)."""
    value = button_value(session_id, turn_id, request_id)
    return {
        "channel": thread.channel,
        "thread_ts": thread.thread,
        "text": prompt,
        "metadata": metadata(key),
        "blocks": [
            {"type": "section", "text": {"type": "mrkdwn", "text": prompt}},
            {
                "type": "actions",
                "elements": [
                    {
                        "type": "button",
                        "action_id": APPROVE,
                        "style": "primary",
                        "text": {"type": "plain_text", "text": "Approve"},
                        "value": value,
                    },
                    {
                        "type": "button",
                        "action_id": DENY,
                        "style": "danger",
                        "text": {"type": "plain_text", "text": "Deny"},
                        "value": value,
                    },
                ],
            },
        ],
    }


def posted_keys(replies: dict[str, Any]) -> set[str]:
    """The delivery ids of turnkeep's messages in a ``conversations.replies`` answer."""
    keys: set[str] = set()
    for message in replies.get("messages") or ():
        meta = message.get("metadata") or {}
        if meta.get("event_type") == METADATA_TYPE:
            key = (meta.get("event_payload") or {}).get("delivery_id")
            if isinstance(key, str):
                keys.add(key)
    return keys


def answered_body(channel: str, ts: str, *, approved: bool, user: str) -> dict[str, Any]:
    """``chat.update``'s body: the prompt says how it was answered, its buttons gone."""
    text = f"{'Approved' if approved else 'Denied'} by <@{user}>."
    block = {"type": "section", "text": {"type": "mrkdwn", "text": text}}
    return {"channel": channel, "ts": ts, "text": text, "blocks": [block]}
