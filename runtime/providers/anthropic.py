"""Adapter for the Anthropic Messages API."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from runtime.errors import PermanentModelError, TransientModelError
from runtime.messages import ModelRequest, ModelResponse, Role, ToolCall, Usage
from runtime.providers.base import DeltaSink, StopCheck
from runtime.providers.http import (
    DeltaEmitter,
    HttpProvider,
    check_stop,
    error_for_payload,
    open_event_stream,
    parse_arguments,
    parse_object,
)

NAME = "anthropic"
API_VERSION = "2023-06-01"
#: the API requires max_tokens; this fits every current model's output limit
DEFAULT_MAX_TOKENS = 4096
_RESERVED = frozenset({"model", "messages", "system", "stream", "tools"})


def build_payload(request: ModelRequest) -> dict[str, Any]:
    """The JSON body of one streaming Messages call.

    Messages of one role in a row are merged into one message: tool results must
    all sit in the user message right after the assistant's tool_use blocks.
    """
    system = [request.instructions] if request.instructions else []
    turns: list[dict[str, Any]] = []

    def add(role: str, blocks: list[dict[str, Any]]) -> None:
        if not blocks:
            return
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": role, "content": blocks})

    for msg in request.messages:
        if msg.role is Role.SYSTEM:
            # The Messages API has no system role in the conversation.
            if msg.content:
                system.append(msg.content)
        elif msg.role is Role.TOOL:
            result: dict[str, Any] = {
                "type": "tool_result",
                "tool_use_id": msg.tool_call_id or "",
                "content": msg.content,
            }
            if msg.is_error:
                result["is_error"] = True
            add("user", [result])
        else:
            # The API rejects empty text blocks, e.g. an assistant turn of tool calls only.
            blocks: list[dict[str, Any]] = (
                [{"type": "text", "text": msg.content}] if msg.content else []
            )
            blocks.extend(
                {"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments}
                for c in msg.tool_calls
            )
            add("assistant" if msg.role is Role.ASSISTANT else "user", blocks)

    payload = {k: v for k, v in request.options.items() if k not in _RESERVED}
    payload.setdefault("max_tokens", DEFAULT_MAX_TOKENS)
    if request.max_output_tokens is not None:
        payload["max_tokens"] = request.max_output_tokens
    payload.update(model=request.model, messages=turns, stream=True)
    if system:
        payload["system"] = "\n\n".join(system)
    if request.tools:
        payload["tools"] = [
            {"name": t.name, "description": t.description, "input_schema": t.parameters}
            for t in request.tools
        ]
    return payload


@dataclass
class _Block:
    kind: str
    text: list[str] = field(default_factory=list)
    id: str = ""
    name: str = ""
    json: list[str] = field(default_factory=list)
    start_input: dict[str, Any] = field(default_factory=dict)


@dataclass
class _Assembly:
    """Accumulates stream events into one response."""

    blocks: dict[int, _Block] = field(default_factory=dict)
    input_tokens: int = 0
    output_tokens: int = 0
    model: str = ""
    stop_reason: str = ""

    def _usage(self, usage: Any) -> None:
        if not isinstance(usage, dict):
            return
        # Cached prompt tokens are reported apart but still count against budgets.
        keys = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
        if any(isinstance(usage.get(k), int) for k in keys):
            self.input_tokens = sum(int(usage.get(k) or 0) for k in keys)
        if isinstance(usage.get("output_tokens"), int):
            self.output_tokens = usage["output_tokens"]

    def add(self, etype: str, data: dict[str, Any], emit: DeltaEmitter) -> None:
        if etype == "message_start":
            message = data["message"]
            self.model = str(message.get("model") or "")
            self._usage(message.get("usage"))
        elif etype == "content_block_start":
            cb = data["content_block"]
            block = _Block(kind=str(cb.get("type")))
            if block.kind == "tool_use":
                block.id, block.name = str(cb["id"]), str(cb["name"])
                block.start_input = dict(cb.get("input") or {})
            elif block.kind == "text" and cb.get("text"):
                block.text.append(str(cb["text"]))
                emit(str(cb["text"]))
            self.blocks[int(data["index"])] = block
        elif etype == "content_block_delta":
            block = self.blocks[int(data["index"])]
            delta = data["delta"]
            if delta.get("type") == "text_delta":
                block.text.append(str(delta["text"]))
                emit(str(delta["text"]))
            elif delta.get("type") == "input_json_delta":
                block.json.append(str(delta.get("partial_json") or ""))
        elif etype == "message_delta":
            if data.get("delta", {}).get("stop_reason"):
                self.stop_reason = str(data["delta"]["stop_reason"])
            self._usage(data.get("usage"))
        # ping, content_block_stop and event types added later carry nothing we keep.

    def finish(self) -> ModelResponse:
        text: list[str] = []
        calls: list[ToolCall] = []
        for _, block in sorted(self.blocks.items()):
            if block.kind == "text":
                text.extend(block.text)
            elif block.kind == "tool_use":
                raw = "".join(block.json)
                args = parse_arguments(NAME, raw) if raw else block.start_input
                calls.append(ToolCall(id=block.id, name=block.name, arguments=args))
        return ModelResponse(
            text="".join(text),
            tool_calls=tuple(calls),
            usage=Usage(input_tokens=self.input_tokens, output_tokens=self.output_tokens),
            model=self.model,
            stop_reason=self.stop_reason,
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
        assembly = _Assembly()
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
