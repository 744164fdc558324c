"""Provider-neutral messages, tool calls and model responses.

These are the records the journal stores (as their ``to_json`` form) and the
transcript is rebuilt from, so their JSON field names are persisted data.

Provider metadata: what one provider needs handed back on its next request and no
other provider may see (Anthropic's signed thinking blocks, say) rides on the
message in a versioned envelope, ``Message.provider_meta``::

    {"v": 1, "provider": "anthropic", "model": "<the answering model>",
     "blocks": [<provider content blocks, verbatim>],
     "sha256": "<canonical-JSON SHA-256 of blocks, taken as received>",
     "cache_control": {...}}          # optional, set by a request processor

It is written to ``to_json`` only when present. The journal never holds it
(docs/erasure.md): ``journal_form`` splits it off a model's answer, the worker keeps it
in its own table beside the call's event, and ``with_state`` puts it back on the
message when the next request for that provider is built. An adapter reads it only
through ``meta_for`` (its own provider, a version this code knows) and ``meta_blocks``
(blocks still as received: a block altered after the fact, e.g. by redaction, is
dropped rather than sent back with a signature that no longer matches). Delivery (the
API's transcript and events) never shows it: ``public_message`` and
``public_event_data`` strip it, should an event older than migration 0017 hold one.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from functools import cached_property
from typing import Any

from turnkeep.runtime.hashing import sha256_hex

log = logging.getLogger(__name__)

#: the key of the envelope in a message's JSON form (persisted)
PROVIDER_META = "provider_meta"
#: the envelope version this code writes; it reads only this one and ignores others
PROVIDER_META_VERSION = 1


class Role(StrEnum):
    """Who a transcript message is from."""

    #: standing instructions supplied with a turn's input
    SYSTEM = "system"
    #: the person or program that submitted the turn
    USER = "user"
    #: the model
    ASSISTANT = "assistant"
    #: the result of one tool call, answering the assistant message that asked for it
    TOOL = "tool"


@dataclass(frozen=True)
class ToolCall:
    """One tool call a model asked for; ``id`` is the provider's call id."""

    id: str
    name: str
    arguments: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "arguments": self.arguments}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ToolCall:
        return cls(id=str(data["id"]), name=str(data["name"]), arguments=dict(data["arguments"]))


@dataclass(frozen=True)
class Message:
    """One transcript message. ``tool_calls`` only on assistant messages,
    ``tool_call_id`` and ``is_error`` only on tool messages; ``provider_meta`` is the
    envelope described in the module docstring."""

    role: Role
    content: str
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None
    is_error: bool = False
    provider_meta: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"role": self.role.value, "content": self.content}
        if self.tool_calls:
            out["tool_calls"] = [c.to_json() for c in self.tool_calls]
        if self.tool_call_id is not None:
            out["tool_call_id"] = self.tool_call_id
        if self.name is not None:
            out["name"] = self.name
        if self.is_error:
            out["is_error"] = True
        if self.provider_meta is not None:
            out[PROVIDER_META] = self.provider_meta
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Message:
        meta = data.get(PROVIDER_META)
        calls = data.get("tool_calls")
        # filled as the frozen constructor would, without its per-field setattr: a
        # context window builds one per conversation row on every model call
        message = object.__new__(cls)
        message.__dict__.update(
            role=_ROLES.get(data["role"]) or Role(data["role"]),
            content=str(data.get("content") or ""),
            tool_calls=tuple(ToolCall.from_json(c) for c in calls) if calls else (),
            tool_call_id=data.get("tool_call_id"),
            name=data.get("name"),
            is_error=bool(data.get("is_error", False)),
            provider_meta=meta if isinstance(meta, dict) else None,
        )
        return message

    @cached_property
    def tokens(self) -> int:
        """A conservative token count of the message as a request carries it (UTF-8
        bytes / 3 per text, plus ``MESSAGE_OVERHEAD`` for it and each tool call; its
        provider's envelope too), counted once: a message of a window a worker keeps
        (store/context_cache.py) is in every later turn's requests (runtime/window.py)."""
        if not self.tool_calls and self.provider_meta is None:
            return MESSAGE_OVERHEAD + estimate(self.content)  # most messages: text alone
        calls = sum(
            MESSAGE_OVERHEAD + estimate(c.name) + estimate(json.dumps(c.arguments, sort_keys=True))
            for c in self.tool_calls
        )
        # a provider's envelope (thinking blocks and their signatures) goes back to that
        # provider as input; counted for every provider: an overestimate compacts early,
        # an underestimate overflows
        meta = 0 if self.provider_meta is None else estimate(json.dumps(self.provider_meta))
        return MESSAGE_OVERHEAD + estimate(self.content) + calls + meta


#: tokens a message costs beyond its text (role, separators)
MESSAGE_OVERHEAD = 4


def estimate(text: str) -> int:
    """A conservative token count of ``text``."""
    return math.ceil(len(text.encode("utf-8")) / 3)


#: a role's value to its member, looked up without the enum's call
_ROLES: dict[Any, Role] = {r.value: r for r in Role}


def new_provider_meta(
    provider: str, blocks: Sequence[dict[str, Any]], *, model: str = ""
) -> dict[str, Any]:
    """A new envelope of ``blocks`` as ``provider`` sent them, with their digest."""
    kept = [dict(b) for b in blocks]
    return {
        "v": PROVIDER_META_VERSION,
        "provider": provider,
        "model": model,
        "blocks": kept,
        "sha256": sha256_hex(kept),
    }


def meta_for(message: Message, provider: str) -> dict[str, Any] | None:
    """The message's envelope if this code reads its version and it was written for
    ``provider``; None otherwise (none, another provider's, a newer version's)."""
    meta = message.provider_meta
    if meta is None or meta.get("v") != PROVIDER_META_VERSION:
        return None
    return meta if meta.get("provider") == provider else None


def meta_blocks(meta: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The envelope's blocks, if they are still exactly as received; otherwise none.

    A provider verifies what it signed: a changed thinking block fails the whole
    request, while one left out of an earlier turn is allowed. So a mismatch (the
    journal's redaction rewrote a secret inside one, say) drops the blocks."""
    blocks = meta.get("blocks")
    if not isinstance(blocks, list) or not blocks:
        return []
    if not all(isinstance(b, dict) for b in blocks) or meta.get("sha256") != sha256_hex(blocks):
        log.warning(
            "%s metadata changed since it was received; not sending it back",
            str(meta.get("provider"))[:40],
        )
        return []
    return [dict(b) for b in blocks]


def journal_form(message: Message) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """A message as the journal keeps it (its JSON without the envelope), and the
    envelope (None: none), which is kept apart (docs/erasure.md)."""
    data = message.to_json()
    return public_message(data), data.get(PROVIDER_META)


def with_state(data: Mapping[str, Any], meta: Mapping[str, Any] | None) -> dict[str, Any]:
    """A journalled assistant message's JSON with its envelope put back, for the next
    request of the provider that left it; as it is without one."""
    if meta is None or data.get("role") != Role.ASSISTANT.value:
        return dict(data)
    return {**data, PROVIDER_META: dict(meta)}


def public_message(data: Mapping[str, Any]) -> dict[str, Any]:
    """A message's JSON form as delivery shows it: without provider metadata."""
    return {k: v for k, v in data.items() if k != PROVIDER_META}


def public_event_data(data: Mapping[str, Any]) -> dict[str, Any]:
    """An event's data as delivery shows it: its ``message`` without provider metadata."""
    message = data.get("message")
    if isinstance(message, Mapping) and PROVIDER_META in message:
        return {**data, "message": public_message(message)}
    return dict(data)


@dataclass(frozen=True)
class Usage:
    """Token counts a provider reported for one call.

    ``input_tokens`` counts every prompt token, cached ones included (budgets count
    them all); ``cache_read_tokens`` and ``cache_write_tokens`` say how many of them
    were read from or written to the provider's prompt cache, which prices them apart
    (runtime/pricing.py). Those two are persisted only when not zero.
    """

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    def to_json(self) -> dict[str, int]:
        out = {"input_tokens": self.input_tokens, "output_tokens": self.output_tokens}
        if self.cache_read_tokens:
            out["cache_read_tokens"] = self.cache_read_tokens
        if self.cache_write_tokens:
            out["cache_write_tokens"] = self.cache_write_tokens
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Usage:
        """The persisted form back; missing or non-integer counts are zero."""

        def count(key: str) -> int:
            value = data.get(key)
            return value if isinstance(value, int) and not isinstance(value, bool) else 0

        return cls(
            input_tokens=count("input_tokens"),
            output_tokens=count("output_tokens"),
            cache_read_tokens=count("cache_read_tokens"),
            cache_write_tokens=count("cache_write_tokens"),
        )


@dataclass(frozen=True)
class ToolSpec:
    """What a model is told about one tool."""

    name: str
    description: str
    parameters: dict[str, Any]


@dataclass(frozen=True)
class ModelRequest:
    """One model call: provider-neutral, built from the transcript."""

    model: str
    instructions: str
    messages: tuple[Message, ...]
    tools: tuple[ToolSpec, ...] = ()
    max_output_tokens: int | None = None
    options: dict[str, Any] = field(default_factory=dict)
    #: the JSON schema the final answer must match, asked of the provider at the source
    #: (runtime/providers/structured.py); None for free text (and for compaction calls)
    output_schema: dict[str, Any] | None = None


@dataclass(frozen=True)
class ModelResponse:
    """What one model call answered: text and/or tool calls.

    ``model`` is the model the provider says answered (from its response), which may
    differ from the one asked for (an alias resolved, a fallback); empty when the
    provider did not say. ``stop_reason`` is the provider's own word for it.
    """

    text: str
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage = Usage()
    model: str = ""
    stop_reason: str = ""
    provider_meta: dict[str, Any] | None = None

    def to_message(self) -> Message:
        return Message(
            role=Role.ASSISTANT,
            content=self.text,
            tool_calls=self.tool_calls,
            provider_meta=self.provider_meta,
        )
