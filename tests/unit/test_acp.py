"""The ACP translation without processes: journal events → session updates, a turn's
end → stop reason, prompt blocks → the turn's text, the prompt's turn id."""

from __future__ import annotations

from typing import Any

import pytest
from acp import RequestError
from acp.schema import (
    AgentMessageChunk,
    EmbeddedResourceContentBlock,
    ImageContentBlock,
    ResourceContentBlock,
    TextContentBlock,
    TextResourceContents,
    ToolCallProgress,
    ToolCallStart,
)

from turnkeep.acp import Translation, _turn_id, prompt_text, stop_reason
from turnkeep.client import Event


def ev(type: str, data: dict[str, Any], seq: int = 1) -> Event:
    return Event(
        seq=seq,
        session_id="s",
        turn_id="s.1",
        type=type,
        data=data,
        created_at="2025-01-01T00:00:00+00:00",
    )


def text(updates: list[Any]) -> list[str]:
    return [u.content.text for u in updates if isinstance(u, AgentMessageChunk)]


def test_a_turn_becomes_message_chunks_and_tool_calls() -> None:
    t = Translation("s.1")
    call = {"id": "call_1", "name": "get_weather", "arguments": {"city": "Oslo"}}
    first = t.updates(
        ev(
            "model.completed",
            {"message": {"role": "assistant", "content": "Looking.", "tool_calls": [call]}},
        )
    )
    assert text(first) == ["Looking."]
    [start] = [u for u in first if isinstance(u, ToolCallStart)]
    assert (start.tool_call_id, start.title, start.status, start.raw_input) == (
        "s.1/call_1",
        "get_weather",
        "pending",
        {"city": "Oslo"},
    )
    tool = {"role": "tool", "content": "boom", "tool_call_id": "call_1", "is_error": True}
    [done] = t.updates(ev("tool.completed", {"message": tool}))
    assert isinstance(done, ToolCallProgress)
    assert (done.tool_call_id, done.status, done.raw_output) == ("s.1/call_1", "failed", "boom")
    final = t.updates(
        ev("model.completed", {"message": {"role": "assistant", "content": "Sunny."}})
    )
    assert text(final) == ["\n\nSunny."]  # apart from the text before it
    assert t.updates(ev("turn.completed", {"result": {"text": "Sunny."}})) == []  # said already
    assert t.updates(ev("turn.started", {})) == []


def test_the_result_is_said_when_no_model_text_said_it() -> None:
    t = Translation("s.1")
    assert text(t.updates(ev("turn.completed", {"result": {"text": "42"}}))) == ["42"]


def test_a_request_no_permission_answers_is_said() -> None:
    t = Translation("s.1")
    [msg] = text(
        t.updates(ev("input.requested", {"kind": "question", "request_id": "question-2-1"}))
    )
    assert "question-2-1" in msg
    assert t.updates(ev("input.requested", {"kind": "approval", "request_id": "a"})) == []


def test_stop_reasons() -> None:
    assert stop_reason("completed", None, cancelling=False) == "end_turn"
    assert stop_reason("cancelled", None, cancelling=False) == "cancelled"
    # ACP: once the client cancelled, the prompt answers cancelled (_meta says the truth)
    assert stop_reason("completed", None, cancelling=True) == "cancelled"
    budget = {"code": "budget_exceeded", "bound": "max_tokens"}
    assert stop_reason("failed", budget, cancelling=False) == "max_tokens"
    budget["bound"] = "max_tool_calls"
    assert stop_reason("failed", budget, cancelling=False) == "max_turn_requests"
    with pytest.raises(RequestError) as info:
        stop_reason("failed", {"code": "model_failed", "message": "401"}, cancelling=False)
    assert info.value.code == -32603 and info.value.data["code"] == "model_failed"


def test_prompt_text_takes_text_links_and_embedded_text() -> None:
    blocks: list[Any] = [
        TextContentBlock(type="text", text="Review this"),
        ResourceContentBlock(type="resource_link", name="a.py", uri="file:///a.py"),
        EmbeddedResourceContentBlock(
            type="resource", resource=TextResourceContents(uri="file:///b.py", text="x = 1")
        ),
    ]
    assert prompt_text(blocks) == (
        'Review this\n\n[a.py](file:///a.py)\n\n<resource uri="file:///b.py">\nx = 1\n</resource>'
    )
    with pytest.raises(RequestError):
        prompt_text([ImageContentBlock(type="image", data="", mime_type="image/png")])
    with pytest.raises(RequestError):
        prompt_text([TextContentBlock(type="text", text="  ")])


def test_turn_ids() -> None:
    assert _turn_id("acp-1", 3, None) == "acp-1.3"
    assert _turn_id("acp-1", 3, "editor-prompt-9") == "editor-prompt-9"
    with pytest.raises(RequestError):
        _turn_id("acp-1", 3, "no spaces")
