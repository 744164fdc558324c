"""Chat bridges: what every adapter (Slack, the generic webhook) hands the runtime, and
the ids the runtime derives from it (docs/bridges.md).

An adapter does four things and no more: it verifies an inbound request, names its
sender (``turnkeep.store.bridges.Sender``: bridge, workspace, channel, user), names the
thread, and knows how to post a reply there. Everything else is the runtime's, the
same for every adapter:

- one session per thread: its id a digest of (bridge, workspace, channel, thread), so
  a thread always lands in the same session (a provider's thread id may be unique
  within its channel only: Slack's ``ts`` is), whose lane runs its messages one at a time, in
  order; two threads are two sessions and run in parallel;
- one turn per message: its id a digest of (bridge, workspace, the message's own id
  at the provider), so a provider's retry of the same message is a replay of the
  same turn, never a second one;
- the reply is a connector action in the webhook outbox, written with the turn.

Pure: no I/O here.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from turnkeep.runtime.settings import Settings

#: the bridges there are, as bindings and ids name them
SLACK = "slack"
GENERIC = "generic"
BRIDGES = (SLACK, GENERIC)

#: hex digits of the digest in a derived id (128 bits: no two threads collide)
DIGEST_CHARS = 32


def _digest(*parts: str) -> str:
    # JSON of the parts: no separator inside a part can make two tuples one string
    raw = json.dumps(list(parts), separators=(",", ":")).encode()
    return hashlib.sha256(raw).hexdigest()[:DIGEST_CHARS]


def tenant_of(settings: Settings, bridge: str, workspace: str) -> str | None:
    """The tenant an operator assigned ``workspace`` of ``bridge`` to (None: none).
    A Slack workspace by its team id (``settings.slack.workspaces``); the generic bridge's
    every workspace is its secret's tenant (``settings.bridge.tenant``), since whoever holds
    that secret can name any workspace."""
    if bridge == SLACK:
        return settings.slack.workspaces.get(workspace) or None
    if bridge == GENERIC:
        return settings.bridge.tenant or None
    return None


def session_id(bridge: str, workspace: str, channel: str, thread: str) -> str:
    """The session of one thread (``[A-Za-z0-9._-]``, the id rule of
    api/service/requests.py, whatever the provider's ids hold). Sessions made before
    the channel was part of it have ids of (bridge, workspace, thread): four parts
    never digest to what three did, so an old id is never reused (docs/bridges.md)."""
    return f"{bridge}.{_digest(bridge, workspace, channel, thread)}"


def turn_id(bridge: str, workspace: str, message: str) -> str:
    """The turn of one message: the same for each delivery of it."""
    return f"{bridge}.{_digest(bridge, workspace, message)}"


@dataclass(frozen=True)
class Thread:
    """Where a conversation happens at the provider: what a reply is posted into."""

    workspace: str
    channel: str
    #: the provider's thread id (Slack: the ``ts`` of the thread's first message)
    thread: str

    def target(self) -> dict[str, str]:
        """The outbox row's ``target`` (store/schema.py ``webhooks.target``)."""
        return {"workspace": self.workspace, "channel": self.channel, "thread": self.thread}

    @classmethod
    def from_target(cls, target: dict[str, Any]) -> Thread:
        return cls(str(target["workspace"]), str(target["channel"]), str(target["thread"]))


@dataclass(frozen=True)
class InboundMessage:
    """One verified message from a person, as an adapter parsed it."""

    bridge: str
    thread: Thread
    user: str
    #: the message's own id at the provider (Slack: its channel and ``ts``)
    message_id: str
    text: str
    #: whether it addressed the bot (a mention): a message that did not only continues
    #: a thread the bot is in already
    addressed: bool

    @property
    def session_id(self) -> str:
        thread = self.thread
        return session_id(self.bridge, thread.workspace, thread.channel, thread.thread)

    @property
    def turn_id(self) -> str:
        return turn_id(self.bridge, self.thread.workspace, self.message_id)


def reply_text(state: str, result: dict[str, Any] | None, error: dict[str, Any] | None) -> str:
    """What a settled turn says in its thread: the answer's text, or why there is none
    (the error's code only: its message may hold what the thread should not see)."""
    if state == "completed":
        text = (result or {}).get("text")
        if isinstance(text, str) and text.strip():
            return text
        output = (result or {}).get("output")
        return json.dumps(output, ensure_ascii=False) if output is not None else "(no answer)"
    if state == "cancelled":
        return "This turn was cancelled."
    code = (error or {}).get("code") or "error"
    return f"Sorry, this turn failed ({code})."
