"""Provider-neutral messages, tool calls and model responses.

These are the records the journal stores (as their ``to_json`` form) and the
transcript is rebuilt from, so their JSON field names are persisted data.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


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
    ``tool_call_id`` and ``is_error`` only on tool messages."""

    role: Role
    content: str
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None
    is_error: bool = False

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
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Message:
        return cls(
            role=Role(data["role"]),
            content=str(data.get("content") or ""),
            tool_calls=tuple(ToolCall.from_json(c) for c in data.get("tool_calls") or ()),
            tool_call_id=data.get("tool_call_id"),
            name=data.get("name"),
            is_error=bool(data.get("is_error", False)),
        )


@dataclass(frozen=True)
class Usage:
    """Token counts a provider reported for one call."""

    input_tokens: int = 0
    output_tokens: int = 0

    def to_json(self) -> dict[str, int]:
        return {"input_tokens": self.input_tokens, "output_tokens": self.output_tokens}


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


@dataclass(frozen=True)
class ModelResponse:
    """What one model call answered: text and/or tool calls."""

    text: str
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage = Usage()
    model: str = ""
    stop_reason: str = ""

    def to_message(self) -> Message:
        return Message(role=Role.ASSISTANT, content=self.text, tool_calls=self.tool_calls)
