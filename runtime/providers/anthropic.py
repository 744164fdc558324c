"""Adapter for the Anthropic Messages API.

Thinking blocks (``thinking`` with its ``signature``, ``redacted_thinking``) come back
in the response's provider metadata (runtime/messages.py) and go out again, exactly
as received, at the head of that assistant message's content, where the API wants
them; an envelope of another provider, or of a newer version, is never sent. A
``cache_control`` marker in a message's envelope (``with_cache_control``) goes on
the last content block of that message.

An output schema becomes the ``final_output`` tool (runtime/providers/structured.py):
forced when the agent has no tools and thinking is off, offered otherwise. Its call
is the final answer: the response's text is its input as JSON, and it is never a
tool call. Called beside other tools it is premature: it is dropped, the other calls
run, and the model answers again after them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import Any

from turnkeep.runtime.errors import PermanentModelError, TransientModelError
from turnkeep.runtime.messages import (
    PROVIDER_META_VERSION,
    Message,
    ModelRequest,
    ModelResponse,
    Role,
    ToolCall,
    Usage,
    meta_blocks,
    meta_for,
    new_provider_meta,
)
from turnkeep.runtime.providers.base import DeltaSink, StopCheck
from turnkeep.runtime.providers.http import (
    DeltaEmitter,
    HttpProvider,
    check_stop,
    error_for_payload,
    open_event_stream,
    parse_arguments,
    parse_object,
)
from turnkeep.runtime.providers.structured import (
    OUTPUT_TOOL,
    OUTPUT_TOOL_DESCRIPTION,
    OUTPUT_TOOL_HINT,
    WRAP_KEY,
    is_object_schema,
    thinking_enabled,
    wire_schema,
)

NAME = "anthropic"
API_VERSION = "2023-06-01"
#: the API requires max_tokens; this fits every current model's output limit
DEFAULT_MAX_TOKENS = 4096
_RESERVED = frozenset({"model", "messages", "system", "stream", "tools"})
#: content blocks kept in provider metadata and handed back on the next request
THINKING_BLOCKS = frozenset({"thinking", "redacted_thinking"})


def with_cache_control(message: Message, marker: dict[str, Any] | None = None) -> Message:
    """``message`` marked as a prompt-cache breakpoint for this provider (default
    ``{"type": "ephemeral"}``): a hook for request processors. Thinking blocks it
    already carries stay; another provider's envelope is replaced."""
    meta = meta_for(message, NAME) or {"v": PROVIDER_META_VERSION, "provider": NAME}
    cache = marker if marker is not None else {"type": "ephemeral"}
    return replace(message, provider_meta={**meta, "cache_control": cache})


def _content(msg: Message, meta: dict[str, Any] | None) -> list[dict[str, Any]]:
    """One non-system message's content blocks: thinking blocks first (assistant
    messages), then text, then tool calls; a cache marker on the last one."""
    if msg.role is Role.TOOL:
        result: dict[str, Any] = {
            "type": "tool_result",
            "tool_use_id": msg.tool_call_id or "",
            "content": msg.content,
        }
        if msg.is_error:
            result["is_error"] = True
        blocks = [result]
    else:
        blocks = meta_blocks(meta) if meta is not None and msg.role is Role.ASSISTANT else []
        # The API rejects empty text blocks, e.g. an assistant turn of tool calls only.
        if msg.content:
            blocks.append({"type": "text", "text": msg.content})
        blocks.extend(
            {"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments}
            for c in msg.tool_calls
        )
    cache = None if meta is None else meta.get("cache_control")
    # thinking blocks cannot carry a cache marker
    if isinstance(cache, dict) and blocks and blocks[-1]["type"] not in THINKING_BLOCKS:
        blocks[-1] = {**blocks[-1], "cache_control": cache}
    return blocks


def _output_tool(
    request: ModelRequest, output_schema: dict[str, Any], payload: dict[str, Any], system: list[str]
) -> None:
    """Offer (or force) the ``final_output`` tool for the request's output schema."""
    if any(t.name == OUTPUT_TOOL for t in request.tools):
        raise PermanentModelError(
            f"{NAME}: the tool name {OUTPUT_TOOL!r} is reserved for the output schema"
        )
    schema, _ = wire_schema(output_schema)
    payload.setdefault("tools", []).append(
        {"name": OUTPUT_TOOL, "description": OUTPUT_TOOL_DESCRIPTION, "input_schema": schema}
    )
    if not request.tools and not thinking_enabled(request.options):
        payload["tool_choice"] = {"type": "tool", "name": OUTPUT_TOOL}
    else:
        # free choice: the agent's tools stay usable, and thinking refuses a forced one
        payload.setdefault("tool_choice", {"type": "auto"})
        system.append(OUTPUT_TOOL_HINT)


def build_payload(request: ModelRequest) -> dict[str, Any]:
    """The JSON body of one streaming Messages call.

    Messages of one role in a row are merged into one message: tool results must
    all sit in the user message right after the assistant's tool_use blocks.
    """
    system = [request.instructions] if request.instructions else []
    turns: list[dict[str, Any]] = []
    for msg in request.messages:
        if msg.role is Role.SYSTEM:
            # The Messages API has no system role in the conversation.
            if msg.content:
                system.append(msg.content)
            continue
        blocks = _content(msg, meta_for(msg, NAME))
        role = "assistant" if msg.role is Role.ASSISTANT else "user"
        if not blocks:
            continue
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": role, "content": blocks})

    payload = {k: v for k, v in request.options.items() if k not in _RESERVED}
    payload.setdefault("max_tokens", DEFAULT_MAX_TOKENS)
    if request.max_output_tokens is not None:
        payload["max_tokens"] = request.max_output_tokens
    payload.update(model=request.model, messages=turns, stream=True)
    if request.tools:
        payload["tools"] = [
            {"name": t.name, "description": t.description, "input_schema": t.parameters}
            for t in request.tools
        ]
    if request.output_schema is not None:
        _output_tool(request, request.output_schema, payload, system)
    if system:
        payload["system"] = "\n\n".join(system)
    return payload


@dataclass
class _Block:
    kind: str
    text: list[str] = field(default_factory=list)
    id: str = ""
    name: str = ""
    json: list[str] = field(default_factory=list)
    start_input: dict[str, Any] = field(default_factory=dict)
    signature: list[str] = field(default_factory=list)
    #: a block kept whole as it arrived (``redacted_thinking``)
    whole: dict[str, Any] = field(default_factory=dict)

    def thinking(self) -> dict[str, Any]:
        """The thinking block as the API sent it, to hand back unchanged."""
        if self.kind == "thinking":
            return {
                "type": "thinking",
                "thinking": "".join(self.text),
                "signature": "".join(self.signature),
            }
        return self.whole

    def answer(self, wrapped: bool) -> str:
        """The ``final_output`` call's input as the answer's JSON text; its raw text
        when that is not JSON (cut off at max_tokens, say): the settlement reports it."""
        raw = "".join(self.json)
        if not raw.strip():
            raw = json.dumps(self.start_input, ensure_ascii=False)
        try:
            value = json.loads(raw)
        except ValueError:
            return raw
        if wrapped and isinstance(value, dict) and set(value) == {WRAP_KEY}:
            value = value[WRAP_KEY]
        return json.dumps(value, ensure_ascii=False)


#: usage keys of the Messages API, by where they go in ``Usage``
_USAGE_KEYS = {
    "input_tokens": "input",
    "cache_read_input_tokens": "cache_read",
    "cache_creation_input_tokens": "cache_write",
    "output_tokens": "output",
}


@dataclass
class _Assembly:
    """Accumulates stream events into one response."""

    blocks: dict[int, _Block] = field(default_factory=dict)
    #: the latest count of each kind of token (message_delta may repeat or update them)
    tokens: dict[str, int] = field(default_factory=dict)
    model: str = ""
    stop_reason: str = ""
    #: the request offered the output tool; ``wrapped``: its schema was wrapped
    output_tool: bool = False
    wrapped: bool = False

    def _usage(self, usage: Any) -> None:
        if not isinstance(usage, dict):
            return
        for key, kind in _USAGE_KEYS.items():
            if isinstance(usage.get(key), int):
                self.tokens[kind] = usage[key]

    def _start(self, cb: dict[str, Any], emit: DeltaEmitter) -> _Block:
        block = _Block(kind=str(cb.get("type")))
        if block.kind == "tool_use":
            block.id, block.name = str(cb["id"]), str(cb["name"])
            block.start_input = dict(cb.get("input") or {})
        elif block.kind == "text" and cb.get("text"):
            block.text.append(str(cb["text"]))
            emit(str(cb["text"]))
        elif block.kind == "thinking":
            # streamed empty and filled by deltas; taken as given if it ever comes whole
            block.text.append(str(cb.get("thinking") or ""))
            block.signature.append(str(cb.get("signature") or ""))
        elif block.kind == "redacted_thinking":
            block.whole = dict(cb)
        return block

    def add(self, etype: str, data: dict[str, Any], emit: DeltaEmitter) -> None:
        if etype == "message_start":
            message = data["message"]
            # the model that answered, as the API names it (a dated snapshot of an alias)
            self.model = str(message.get("model") or "")
            self._usage(message.get("usage"))
        elif etype == "content_block_start":
            self.blocks[int(data["index"])] = self._start(data["content_block"], emit)
        elif etype == "content_block_delta":
            block = self.blocks[int(data["index"])]
            delta = data["delta"]
            kind = delta.get("type")
            if kind == "text_delta":
                block.text.append(str(delta["text"]))
                emit(str(delta["text"]))
            elif kind == "input_json_delta":
                block.json.append(str(delta.get("partial_json") or ""))
                if self.output_tool and block.name == OUTPUT_TOOL:
                    emit(str(delta.get("partial_json") or ""))  # the answer, as it comes
            elif kind == "thinking_delta":
                block.text.append(str(delta["thinking"]))
            elif kind == "signature_delta":
                block.signature.append(str(delta["signature"]))
        elif etype == "message_delta":
            if data.get("delta", {}).get("stop_reason"):
                self.stop_reason = str(data["delta"]["stop_reason"])
            self._usage(data.get("usage"))
        # ping, content_block_stop and event types added later carry nothing we keep.

    def finish(self) -> ModelResponse:
        text: list[str] = []
        calls: list[ToolCall] = []
        kept: list[dict[str, Any]] = []
        answer: _Block | None = None
        for _, block in sorted(self.blocks.items()):
            if block.kind == "text":
                text.extend(block.text)
            elif block.kind in THINKING_BLOCKS:
                kept.append(block.thinking())
            elif block.kind == "tool_use" and self.output_tool and block.name == OUTPUT_TOOL:
                answer = answer or block
            elif block.kind == "tool_use":
                raw = "".join(block.json)
                args = parse_arguments(NAME, raw) if raw else block.start_input
                calls.append(ToolCall(id=block.id, name=block.name, arguments=args))
        if answer is not None and not calls:
            text = [answer.answer(self.wrapped)]
        cache_read = self.tokens.get("cache_read", 0)
        cache_write = self.tokens.get("cache_write", 0)
        return ModelResponse(
            text="".join(text),
            tool_calls=tuple(calls),
            # cached prompt tokens are reported apart but still count against budgets
            usage=Usage(
                input_tokens=self.tokens.get("input", 0) + cache_read + cache_write,
                output_tokens=self.tokens.get("output", 0),
                cache_read_tokens=cache_read,
                cache_write_tokens=cache_write,
            ),
            model=self.model,
            stop_reason=self.stop_reason,
            provider_meta=new_provider_meta(NAME, kept, model=self.model) if kept else None,
        )


class AnthropicMessagesProvider(HttpProvider):
    """Streams ``POST {base_url}/v1/messages`` with ``x-api-key`` auth (pings keep idle
    streams inside the read timeout)."""

    name = NAME
    path = "/v1/messages"

    def complete(
        self,
        request: ModelRequest,
        *,
        on_delta: DeltaSink | None = None,
        should_stop: StopCheck | None = None,
    ) -> ModelResponse:
        check_stop(should_stop)
        headers = {
            "content-type": "application/json",
            "accept": "text/event-stream",
            "x-api-key": self._api_key,
            "anthropic-version": API_VERSION,
        }
        schema = request.output_schema
        assembly = _Assembly(
            output_tool=schema is not None,
            wrapped=schema is not None and not is_object_schema(schema),
        )
        emit = DeltaEmitter(on_delta)
        with open_event_stream(
            self._client,
            NAME,
            self._url,
            headers=headers,
            payload=build_payload(request),
            timeout=self._timeout,
        ) as events:
            for event in events:
                check_stop(should_stop)
                data = parse_object(NAME, event.data)
                # The JSON "type" repeats the SSE event name and is the documented key.
                etype = str(data.get("type") or event.event)
                if etype == "error":
                    raise error_for_payload(NAME, data.get("error"))
                if etype == "message_stop":
                    return assembly.finish()
                try:
                    assembly.add(etype, data, emit)
                except (KeyError, TypeError, ValueError, AttributeError) as exc:
                    raise PermanentModelError(f"{NAME}: malformed {etype[:40]} event") from exc
        # A clean close before message_stop is a cut connection, not a bad reply.
        raise TransientModelError(f"{NAME}: stream ended before message_stop")
