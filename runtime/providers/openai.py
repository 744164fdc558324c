"""Adapter for the OpenAI Chat Completions API (and servers that copy its wire format).

An output schema goes as ``response_format`` (runtime/providers/structured.py). Chat
Completions hands back nothing a later request needs (no reasoning items), so this
adapter writes no provider metadata and sends none, another provider's least of all.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from turnkeep.runtime.errors import PermanentModelError, TransientModelError
from turnkeep.runtime.messages import Message, ModelRequest, ModelResponse, Role, ToolCall, Usage
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
    RESPONSE_FORMAT_NAME,
    is_object_schema,
    strict_compatible,
    unwrap_text,
    wire_schema,
)

NAME = "openai"
#: payload keys the adapter owns; ``request.options`` cannot override them
_RESERVED = frozenset({"model", "messages", "stream", "stream_options", "tools"})


def response_format(output_schema: dict[str, Any]) -> dict[str, Any]:
    """The ``response_format`` asking for an answer that matches ``output_schema``."""
    schema, _ = wire_schema(output_schema)
    spec = {"name": RESPONSE_FORMAT_NAME, "schema": schema, "strict": strict_compatible(schema)}
    return {"type": "json_schema", "json_schema": spec}


def _message(msg: Message) -> dict[str, Any]:
    if msg.role is Role.TOOL:
        # Chat Completions has no error flag on tool results, so the model is told in-band.
        content = f"ERROR: {msg.content}" if msg.is_error else msg.content
        return {"role": "tool", "tool_call_id": msg.tool_call_id or "", "content": content}
    out: dict[str, Any] = {"role": msg.role.value, "content": msg.content}
    if msg.name is not None and msg.role is not Role.ASSISTANT:
        out["name"] = msg.name
    if msg.role is Role.ASSISTANT and msg.tool_calls:
        out["content"] = msg.content or None
        out["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {
                    "name": call.name,
                    "arguments": json.dumps(call.arguments, ensure_ascii=False),
                },
            }
            for call in msg.tool_calls
        ]
    return out


def build_payload(request: ModelRequest) -> dict[str, Any]:
    """The JSON body of one streaming Chat Completions call."""
    payload = {k: v for k, v in request.options.items() if k not in _RESERVED}
    messages: list[dict[str, Any]] = []
    if request.instructions:
        messages.append({"role": "system", "content": request.instructions})
    messages.extend(_message(m) for m in request.messages)
    payload.update(
        model=request.model,
        messages=messages,
        stream=True,
        stream_options={"include_usage": True},
    )
    if request.tools:
        payload["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": t.name,
                    "description": t.description,
                    "parameters": t.parameters,
                },
            }
            for t in request.tools
        ]
    if request.max_output_tokens is not None:
        payload["max_completion_tokens"] = request.max_output_tokens
    if request.output_schema is not None:
        payload["response_format"] = response_format(request.output_schema)
    return payload


@dataclass
class _PartialCall:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


@dataclass
class _Assembly:
    """Accumulates stream chunks into one response."""

    text: list[str] = field(default_factory=list)
    calls: dict[int, _PartialCall] = field(default_factory=dict)
    usage: Usage = field(default_factory=Usage)
    model: str = ""
    stop_reason: str = ""
    #: the output schema was sent wrapped: unwrap the answer
    wrapped: bool = False

    def add(self, chunk: dict[str, Any], emit: DeltaEmitter) -> None:
        # every chunk names the model that answered (a dated snapshot of an alias)
        if isinstance(chunk.get("model"), str) and chunk["model"]:
            self.model = chunk["model"]
        usage = chunk.get("usage")
        if isinstance(usage, dict):
            details = usage.get("prompt_tokens_details")
            cached = details.get("cached_tokens") if isinstance(details, dict) else None
            self.usage = Usage(
                input_tokens=int(usage.get("prompt_tokens") or 0),
                output_tokens=int(usage.get("completion_tokens") or 0),
                cache_read_tokens=int(cached or 0),
            )
        for choice in chunk.get("choices") or ():
            # We never ask for n > 1; other choices would only be noise.
            if choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta") or {}
            for key in ("content", "refusal"):
                piece = delta.get(key)
                if isinstance(piece, str) and piece:
                    self.text.append(piece)
                    emit(piece)
            for frag in delta.get("tool_calls") or ():
                slot = self.calls.setdefault(int(frag.get("index", 0)), _PartialCall())
                if frag.get("id"):
                    slot.id = str(frag["id"])
                fn = frag.get("function") or {}
                # The name arrives whole in the first fragment; some compatible servers
                # repeat it, so concatenating (as for arguments) would corrupt it.
                if fn.get("name") and not slot.name:
                    slot.name = str(fn["name"])
                if fn.get("arguments"):
                    slot.arguments.append(str(fn["arguments"]))
            if choice.get("finish_reason"):
                self.stop_reason = str(choice["finish_reason"])

    def finish(self) -> ModelResponse:
        calls = []
        for _, slot in sorted(self.calls.items()):
            if not slot.id or not slot.name:
                raise PermanentModelError(f"{NAME}: streamed tool call without id or name")
            args = parse_arguments(NAME, "".join(slot.arguments))
            calls.append(ToolCall(id=slot.id, name=slot.name, arguments=args))
        text = "".join(self.text)
        if self.wrapped and not calls:
            text = unwrap_text(text)
        return ModelResponse(
            text=text,
            tool_calls=tuple(calls),
            usage=self.usage,
            model=self.model,
            stop_reason=self.stop_reason,
        )


class OpenAIChatProvider(HttpProvider):
    """Streams ``POST {base_url}/chat/completions`` with Bearer auth.

    An empty ``api_key`` sends no Authorization header, for local compatible servers.
    """

    name = NAME
    path = "/chat/completions"

    def complete(
        self,
        request: ModelRequest,
        *,
        on_delta: DeltaSink | None = None,
        should_stop: StopCheck | None = None,
    ) -> ModelResponse:
        check_stop(should_stop)
        headers = {"content-type": "application/json", "accept": "text/event-stream"}
        if self._api_key:
            headers["authorization"] = f"Bearer {self._api_key}"
        schema = request.output_schema
        assembly = _Assembly(wrapped=schema is not None and not is_object_schema(schema))
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
                if event.data.strip() == "[DONE]":
                    return assembly.finish()
                chunk = parse_object(NAME, event.data)
                if "error" in chunk or event.event == "error":
                    raise error_for_payload(NAME, chunk.get("error", chunk))
                try:
                    assembly.add(chunk, emit)
                except (TypeError, ValueError, AttributeError) as exc:
                    raise PermanentModelError(f"{NAME}: malformed chunk") from exc
        # A clean close before [DONE] is a cut connection (a proxy idling us out, say).
        raise TransientModelError(f"{NAME}: stream ended before [DONE]")
