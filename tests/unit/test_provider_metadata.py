"""Provider metadata on journal messages (runtime/messages.py): the envelope's
persisted names, old journals loading unchanged, who may read it and where it is
stripped. The wire side is in tests/integration/test_provider_wire.py."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pytest

from turnkeep.runtime import messages
from turnkeep.runtime.messages import (
    Message,
    ModelRequest,
    ModelResponse,
    Role,
    ToolCall,
    journal_form,
    meta_blocks,
    meta_for,
    new_provider_meta,
    public_event_data,
    public_message,
    with_state,
)
from turnkeep.runtime.plan import transcript
from turnkeep.runtime.providers.anthropic import build_payload as anthropic_payload
from turnkeep.runtime.providers.openai import build_payload as openai_payload

THINKING = {"type": "thinking", "thinking": "Let me think.", "signature": "EqQBCgIYAh=="}
REDACTED = {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3p=="}

#: journal messages as they were written before provider metadata existed
OLD_JOURNAL = [
    {"role": "user", "content": "What is the weather in Paris?"},
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"id": "call_1", "name": "get_weather", "arguments": {"city": "Paris"}}],
    },
    {"role": "tool", "content": "18C", "tool_call_id": "call_1", "name": "get_weather"},
    {"role": "tool", "content": "boom", "tool_call_id": "call_2", "is_error": True},
    {"role": "assistant", "content": "Paris is 18C."},
    {"role": "system", "content": None},
]


def test_envelope_names_are_pinned() -> None:
    """Persisted: changing one breaks stored journals."""
    assert messages.PROVIDER_META == "provider_meta"
    assert messages.PROVIDER_META_VERSION == 1
    meta = new_provider_meta("anthropic", [THINKING], model="claude-sonnet-4-5-20250929")
    assert meta == {
        "v": 1,
        "provider": "anthropic",
        "model": "claude-sonnet-4-5-20250929",
        "blocks": [THINKING],
        "sha256": meta["sha256"],
    }
    assert len(meta["sha256"]) == 64


@pytest.mark.parametrize("data", OLD_JOURNAL)
def test_old_journal_json_loads_unchanged(data: dict[str, Any]) -> None:
    message = Message.from_json(data)
    assert message.provider_meta is None
    expected = {**data, "content": data["content"] or ""}
    assert message.to_json() == expected
    assert "provider_meta" not in message.to_json()


def test_the_envelope_round_trips_through_the_journal() -> None:
    meta = new_provider_meta("anthropic", [THINKING, REDACTED])
    message = Message(Role.ASSISTANT, "Hi.", provider_meta=meta)
    stored = json.loads(json.dumps(message.to_json(), sort_keys=True))
    assert stored["provider_meta"] == meta
    again = Message.from_json(stored)
    assert again == message
    assert meta_blocks(meta_for(again, "anthropic") or {}) == [THINKING, REDACTED]


def test_a_malformed_envelope_is_ignored() -> None:
    message = Message.from_json({"role": "assistant", "content": "x", "provider_meta": "junk"})
    assert message.provider_meta is None


def test_the_response_carries_it_to_the_message() -> None:
    meta = new_provider_meta("anthropic", [THINKING])
    response = ModelResponse(
        text="", tool_calls=(ToolCall("t", "f", {}),), model="m", provider_meta=meta
    )
    assert response.to_message().provider_meta == meta
    assert ModelResponse(text="plain").to_message().to_json() == {
        "role": "assistant",
        "content": "plain",
    }


def test_only_its_provider_and_a_known_version_read_it() -> None:
    meta = new_provider_meta("anthropic", [THINKING])
    message = Message(Role.ASSISTANT, "", provider_meta=meta)
    assert meta_for(message, "anthropic") == meta
    assert meta_for(message, "openai") is None
    assert (
        meta_for(Message(Role.ASSISTANT, "", provider_meta={**meta, "v": 2}), "anthropic") is None
    )
    assert meta_for(Message(Role.ASSISTANT, ""), "anthropic") is None


def test_blocks_changed_after_receipt_are_dropped(caplog: pytest.LogCaptureFixture) -> None:
    meta = new_provider_meta("anthropic", [THINKING])
    assert meta_blocks(meta) == [THINKING]
    # JSONB may reorder keys: the digest is over canonical JSON, so that is no change
    assert meta_blocks({**meta, "blocks": [dict(reversed(list(THINKING.items())))]}) == [THINKING]
    redacted = {**meta, "blocks": [{**THINKING, "thinking": "Let me [REDACTED]."}]}
    assert meta_blocks(redacted) == []
    assert "changed since it was received" in caplog.text
    assert meta_blocks({**meta, "blocks": "x"}) == []
    assert meta_blocks({"v": 1, "provider": "anthropic"}) == []


def test_delivery_strips_it() -> None:
    meta = new_provider_meta("anthropic", [THINKING])
    stored = Message(Role.ASSISTANT, "Hi.", provider_meta=meta).to_json()
    assert public_message(stored) == {"role": "assistant", "content": "Hi."}
    data: dict[str, Any] = {
        "message": stored,
        "model": "m",
        "usage": {"input_tokens": 1, "output_tokens": 2},
    }
    shown = public_event_data(data)
    assert shown == {**data, "message": {"role": "assistant", "content": "Hi."}}
    assert data["message"]["provider_meta"] == meta  # the stored form is not touched
    plain = {"result": {"text": "x"}}
    assert public_event_data(plain) == plain


def test_requests_send_it_to_its_own_provider_only() -> None:
    meta = new_provider_meta("anthropic", [THINKING])
    request = ModelRequest(
        model="m",
        instructions="",
        messages=(
            Message(Role.USER, "Hi"),
            Message(
                Role.ASSISTANT,
                "Checking.",
                tool_calls=(ToolCall("toolu_1", "f", {"a": 1}),),
                provider_meta=meta,
            ),
            Message(Role.TOOL, "ok", tool_call_id="toolu_1"),
        ),
    )
    content = anthropic_payload(request)["messages"][1]["content"]
    assert [b["type"] for b in content] == ["thinking", "text", "tool_use"]
    assert content[0] == THINKING
    raw = json.dumps(openai_payload(request))
    assert "thinking" not in raw and "provider_meta" not in raw and "EqQB" not in raw


# -- kept out of the journal (docs/erasure.md) --------------------------------------


def test_the_journal_form_leaves_the_envelope_out_and_with_state_puts_it_back() -> None:
    meta = new_provider_meta("anthropic", [THINKING, REDACTED])
    message = Message(
        Role.ASSISTANT, "Hi.", tool_calls=(ToolCall("t", "f", {}),), provider_meta=meta
    )
    kept, state = journal_form(message)
    assert state == meta
    assert kept == {
        "role": "assistant",
        "content": "Hi.",
        "tool_calls": [{"id": "t", "name": "f", "arguments": {}}],
    }
    assert Message.from_json(with_state(kept, state)) == message
    assert journal_form(Message(Role.ASSISTANT, "plain")) == (
        {"role": "assistant", "content": "plain"},
        None,
    )
    # only an assistant message takes one back
    user = {"role": "user", "content": "x"}
    assert with_state(user, meta) == user and with_state(kept, None) == kept


@dataclass(frozen=True)
class _Event:
    seq: int
    type: str
    step: int | None
    data: dict[str, Any]


def test_the_transcript_takes_each_calls_state_back_by_its_seq() -> None:
    meta = new_provider_meta("anthropic", [THINKING])
    said, _ = journal_form(
        Message(
            Role.ASSISTANT, "Checking.", tool_calls=(ToolCall("t1", "f", {}),), provider_meta=meta
        )
    )
    prior = [
        _Event(
            1, "turn.accepted", None, {"input": {"messages": [{"role": "user", "content": "a"}]}}
        ),
        _Event(3, "model.completed", 1, {"message": {"role": "assistant", "content": "old"}}),
    ]
    events = [
        _Event(
            4, "turn.accepted", None, {"input": {"messages": [{"role": "user", "content": "b"}]}}
        ),
        _Event(6, "model.completed", 1, {"message": said, "provider_state": "anthropic"}),
        _Event(
            7,
            "tool.completed",
            2,
            {"message": {"role": "tool", "content": "ok", "tool_call_id": "t1"}},
        ),
    ]
    given = [{"role": "user", "content": "b"}]
    plain = transcript(given, events, prior)
    assert all(m.provider_meta is None for m in plain)
    kept = transcript(
        given, events, prior, {6: meta, 3: new_provider_meta("anthropic", [REDACTED])}
    )
    assert [m.provider_meta for m in kept] == [
        None,
        new_provider_meta("anthropic", [REDACTED]),
        None,
        meta,
        None,
    ]
    assert [m.content for m in kept] == [m.content for m in plain]
    assert events[1].data["message"] == said  # the journal's entries are not touched
