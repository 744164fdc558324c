"""The generic bridge, the smallest adapter: a signed JSON webhook in, a signed
webhook out (docs/bridges.md "Write a new adapter").

In: ``POST /bridges/generic/messages`` with the body below, signed as turnkeep signs
its own webhooks (``Turnkeep-Signature: t=…,v1=…``, HMAC-SHA256 of ``{t}.{body}``
under ``TURNKEEP_BRIDGE_SECRET``, runtime/webhooks.py ``verify``)::

    {"workspace": "acme", "channel": "support", "thread": "th-42", "user": "u-7",
     "message_id": "m-1001", "text": "Where is my order?"}

Out: the turn's signed webhook (runtime/webhooks.py ``body``) to the binding's
``reply_url``, with ``"thread": {"workspace", "channel", "thread"}`` beside the
outcome. Every message addresses the bot; ``message_id`` is the idempotency key (the
same one twice is one turn).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from turnkeep.runtime import webhooks
from turnkeep.runtime.bridges import GENERIC, InboundMessage, Thread

SIGNATURE_HEADER = webhooks.SIGNATURE_HEADER

_Name = Field(min_length=1, max_length=200, pattern=r"^[^\x00\s]+$")


class GenericMessage(BaseModel):
    """The generic bridge's inbound body."""

    model_config = ConfigDict(extra="forbid")

    workspace: str = _Name
    channel: str = _Name
    thread: str = _Name
    user: str = _Name
    message_id: str = _Name
    text: str = Field(min_length=1, max_length=40_000, pattern=r"^[^\x00]*$")


def verify(secret: str, body: bytes, header: str | None) -> bool:
    """Whether ``header`` signs ``body`` under ``secret`` within the tolerance (an empty
    secret verifies nothing)."""
    return bool(secret) and header is not None and webhooks.verify(secret, body, header)


def parse(body: bytes) -> InboundMessage | None:
    """The message of a verified request; None when the body is not one."""
    try:
        message = GenericMessage.model_validate_json(body)
    except ValidationError:
        return None
    return InboundMessage(
        bridge=GENERIC,
        thread=Thread(message.workspace, message.channel, message.thread),
        user=message.user,
        message_id=message.message_id,
        text=message.text,
        addressed=True,
    )
