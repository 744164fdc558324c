"""Structured output and provider metadata on the wire, against the local servers of
test_providers.py (the real OpenAI and Anthropic formats, streamed): the output schema
is in the request the server receives, the answer comes back as JSON text, and an
Anthropic thinking block goes back to Anthropic exactly as it came, and nowhere else.
"""

# The fixtures reproduce the APIs' one-line JSON events byte for byte, so lines run long.
# ruff: noqa: E501

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.integration.test_providers import (
    ANTHROPIC_TEXT,
    KEY,
    OPENAI_TEXT,
    FakeAPI,
    _oa,
    serve,
    sse,
)
from turnkeep.runtime.errors import PermanentModelError
from turnkeep.runtime.messages import (
    Message,
    ModelRequest,
    ModelResponse,
    Role,
    ToolCall,
    ToolSpec,
    journal_form,
    public_event_data,
    with_state,
)
from turnkeep.runtime.providers import structured
from turnkeep.runtime.providers.anthropic import AnthropicMessagesProvider, with_cache_control
from turnkeep.runtime.providers.anthropic import build_payload as anthropic_payload
from turnkeep.runtime.providers.openai import OpenAIChatProvider
from turnkeep.runtime.providers.openai import build_payload as openai_payload

pytestmark = pytest.mark.timeout(60)

PROMPT = "Weather in Paris, as JSON?"
WEATHER = ToolSpec(
    name="get_weather",
    description="Current weather for a city.",
    parameters={"type": "object", "properties": {"city": {"type": "string"}}},
)
#: keeps strict mode's rules as written
STRICT: dict[str, Any] = {
    "type": "object",
    "properties": {
        "city": {"type": "string"},
        "celsius": {"type": "number"},
        "sky": {"type": ["string", "null"], "enum": ["sunny", "cloudy", None]},
    },
    "required": ["city", "celsius", "sky"],
    "additionalProperties": False,
}
#: valid JSON Schema that strict mode would refuse: an optional property, an open object
LOOSE: dict[str, Any] = {
    "type": "object",
    "properties": {"city": {"type": "string", "minLength": 1}, "note": {"type": "string"}},
    "required": ["city"],
}
#: not an object at the root: sent wrapped, answered unwrapped
LIST: dict[str, Any] = {"type": "array", "items": {"type": "string"}}


@pytest.fixture(scope="module")
def api() -> Iterator[FakeAPI]:
    with serve() as fake:
        yield fake


@pytest.fixture(scope="module")
def client() -> Iterator[httpx.Client]:
    with httpx.Client() as c:
        yield c


def openai(api: FakeAPI, client: httpx.Client) -> OpenAIChatProvider:
    return OpenAIChatProvider(api.base + "/v1", KEY, timeout=5.0, client=client)


def anthropic(api: FakeAPI, client: httpx.Client) -> AnthropicMessagesProvider:
    return AnthropicMessagesProvider(api.base, KEY, timeout=5.0, client=client)


def asking(
    model: str,
    schema: dict[str, Any] | None,
    *,
    tools: tuple[ToolSpec, ...] = (),
    options: dict[str, Any] | None = None,
) -> ModelRequest:
    return ModelRequest(
        model=model,
        instructions="Be brief.",
        messages=(Message(Role.USER, PROMPT),),
        tools=tools,
        options=options or {},
        output_schema=schema,
    )


# ---------------------------------------------------------------- strict mode, decided


@pytest.mark.parametrize(
    ("schema", "strict"),
    [
        (STRICT, True),
        (LOOSE, False),
        ({**STRICT, "additionalProperties": True}, False),
        ({**STRICT, "required": ["city", "celsius"]}, False),
        (
            {
                **STRICT,
                "properties": {
                    **STRICT["properties"],
                    "city": {"type": "string", "default": "Paris"},
                },
            },
            False,
        ),
        (
            {
                **STRICT,
                "properties": {
                    **STRICT["properties"],
                    "when": {"type": "string", "format": "date"},
                },
                "required": ["city", "celsius", "sky", "when"],
            },
            True,
        ),
        (
            {
                **STRICT,
                "properties": {**STRICT["properties"], "when": {"type": "string", "format": "uri"}},
                "required": ["city", "celsius", "sky", "when"],
            },
            False,
        ),
        (
            {
                **STRICT,
                "properties": {**STRICT["properties"], "tags": {"type": "array"}},
                "required": ["city", "celsius", "sky", "tags"],
            },
            False,
        ),
        (
            {
                **STRICT,
                "properties": {**STRICT["properties"], "any": {}},
                "required": ["city", "celsius", "sky", "any"],
            },
            False,
        ),
        (
            {
                **STRICT,
                "properties": {
                    **STRICT["properties"],
                    "pick": {"oneOf": [{"type": "string"}, {"type": "integer"}]},
                },
                "required": ["city", "celsius", "sky", "pick"],
            },
            False,
        ),
        (
            {
                "type": "object",
                "properties": {
                    "place": {"$ref": "#/$defs/Place"},
                    "alt": {"anyOf": [{"$ref": "#/$defs/Place"}, {"type": "null"}]},
                },
                "required": ["place", "alt"],
                "additionalProperties": False,
                "$defs": {
                    "Place": {
                        "type": "object",
                        "properties": {"name": {"type": "string"}},
                        "required": ["name"],
                        "additionalProperties": False,
                    }
                },
            },
            True,
        ),
        (
            {
                "type": "object",
                "properties": {"p": {"$ref": "#/$defs/P", "description": "x"}},
                "required": ["p"],
                "additionalProperties": False,
                "$defs": {"P": {"type": "string"}},
            },
            False,
        ),
        (
            {
                "type": "object",
                "properties": {
                    "inner": {"type": "object", "properties": {"a": {"type": "string"}}}
                },
                "required": ["inner"],
                "additionalProperties": False,
            },
            False,
        ),
        ({"$schema": "https://json-schema.org/draft/2020-12/schema", **STRICT}, False),
        ({"anyOf": [STRICT, {"type": "null"}]}, False),
        (LIST, False),
    ],
)
def test_strict_is_sent_only_for_schemas_that_keep_strict_modes_rules(
    schema: dict[str, Any], strict: bool
) -> None:
    assert structured.strict_compatible(schema) is strict


def test_a_non_object_schema_is_wrapped_and_its_answer_unwrapped() -> None:
    defs = {"T": {"type": "string"}}
    wrapped, was = structured.wire_schema(
        {"type": "array", "items": {"$ref": "#/$defs/T"}, "$defs": defs}
    )
    assert was
    assert wrapped == {
        "type": "object",
        "properties": {"output": {"type": "array", "items": {"$ref": "#/$defs/T"}}},
        "required": ["output"],
        "additionalProperties": False,
        "$defs": defs,
    }
    assert structured.strict_compatible(wrapped)
    assert structured.wire_schema(STRICT) == (STRICT, False)
    assert structured.unwrap_text('{"output": ["a", "b"]}') == '["a", "b"]'
    assert structured.unwrap_text("not json") == "not json"
    assert structured.unwrap_text('{"other": 1}') == '{"other": 1}'


# ---------------------------------------------------------------- OpenAI: response_format

OPENAI_JSON = (
    _oa(b'{"role":"assistant","content":""}')
    + _oa(rb'{"content":"{\"city\":\"Paris\","}')
    + _oa(rb'{"content":"\"celsius\":18,\"sky\":\"sunny\"}"}')
    + _oa(b"{}", b'"stop"')
    + b'data: {"id":"chatcmpl-AqZ2","object":"chat.completion.chunk","created":1736000001,'
    b'"model":"gpt-4o-2024-08-06","system_fingerprint":"fp_f785eb5f47","choices":[],'
    b'"usage":{"prompt_tokens":90,"completion_tokens":14,"total_tokens":104}}\n\n'
    b"data: [DONE]\n\n"
)
OPENAI_WRAPPED = (
    _oa(rb'{"role":"assistant","content":"{\"output\":[\"Paris\","}')
    + _oa(rb'{"content":"\"Oslo\"]}"}')
    + _oa(b"{}", b'"stop"')
    + b"data: [DONE]\n\n"
)


@pytest.mark.parametrize(("schema", "strict"), [(STRICT, True), (LOOSE, False)])
def test_openai_sends_the_schema_as_response_format(
    api: FakeAPI, client: httpx.Client, schema: dict[str, Any], strict: bool
) -> None:
    model = api.script(sse(OPENAI_JSON, piece=9))
    deltas: list[str] = []
    response = openai(api, client).complete(
        asking(model, schema, tools=(WEATHER,)), on_delta=deltas.append
    )
    assert json.loads(response.text) == {"city": "Paris", "celsius": 18, "sky": "sunny"}
    assert "".join(deltas) == response.text
    body = api.seen[model][0].body
    assert body["stream"] is True
    # the schema as written, never rewritten; tools stay free beside it
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "output", "schema": schema, "strict": strict},
    }
    assert [t["function"]["name"] for t in body["tools"]] == ["get_weather"]
    assert "tool_choice" not in body


def test_openai_wraps_a_non_object_schema(api: FakeAPI, client: httpx.Client) -> None:
    model = api.script(sse(OPENAI_WRAPPED))
    response = openai(api, client).complete(asking(model, LIST))
    assert json.loads(response.text) == ["Paris", "Oslo"]
    spec = api.seen[model][0].body["response_format"]["json_schema"]
    assert spec["schema"]["properties"] == {"output": LIST}
    assert spec["strict"] is True


def test_no_schema_sends_no_response_format(api: FakeAPI, client: httpx.Client) -> None:
    model = api.script(sse(OPENAI_TEXT))
    openai(api, client).complete(asking(model, None, options={"response_format": {"type": "text"}}))
    # an agent's own option passes as before when no schema is asked for
    assert api.seen[model][0].body["response_format"] == {"type": "text"}


# ---------------------------------------------------------------- Anthropic: the final_output tool

ANTHROPIC_FINAL = rb"""event: message_start
data: {"type":"message_start","message":{"id":"msg_01Final","type":"message","role":"assistant","model":"claude-haiku-4-5-20251001","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":380,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":1}}}

event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_01Fin","name":"final_output","input":{}}}

event: ping
data: {"type": "ping"}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"city\": \"Paris\", \"cel"}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"sius\": 18, \"sky\": \"sunny\"}"}}

event: content_block_stop
data: {"type":"content_block_stop","index":0}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":31}}

event: message_stop
data: {"type":"message_stop"}

"""

ANTHROPIC_TOOL_AND_FINAL = rb"""event: message_start
data: {"type":"message_start","message":{"id":"msg_01Both","type":"message","role":"assistant","model":"claude-haiku-4-5-20251001","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":410,"output_tokens":1}}}

event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_01W","name":"get_weather","input":{}}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"city\": \"Paris\"}"}}

event: content_block_stop
data: {"type":"content_block_stop","index":0}

event: content_block_start
data: {"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_01F","name":"final_output","input":{}}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"city\": \"Paris\", \"celsius\": 0, \"sky\": null}"}}

event: content_block_stop
data: {"type":"content_block_stop","index":1}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":60}}

event: message_stop
data: {"type":"message_stop"}

"""

FINAL_TOOL = {
    "name": "final_output",
    "description": structured.OUTPUT_TOOL_DESCRIPTION,
    "input_schema": STRICT,
}


def test_anthropic_forces_the_output_tool_on_an_agent_without_tools(
    api: FakeAPI, client: httpx.Client
) -> None:
    model = api.script(sse(ANTHROPIC_FINAL, piece=11))
    deltas: list[str] = []
    response = anthropic(api, client).complete(asking(model, STRICT), on_delta=deltas.append)
    # the forced call is the answer, as JSON text, and no tool call
    assert json.loads(response.text) == {"city": "Paris", "celsius": 18, "sky": "sunny"}
    assert response.tool_calls == ()
    assert response.model == "claude-haiku-4-5-20251001"
    assert json.loads("".join(deltas)) == json.loads(response.text)
    body = api.seen[model][0].body
    assert body["tools"] == [FINAL_TOOL]
    assert body["tool_choice"] == {"type": "tool", "name": "final_output"}
    assert body["system"] == "Be brief."
    assert body["stream"] is True


def test_anthropic_offers_the_output_tool_beside_the_agents_tools(
    api: FakeAPI, client: httpx.Client
) -> None:
    model = api.script(sse(ANTHROPIC_FINAL))
    response = anthropic(api, client).complete(asking(model, STRICT, tools=(WEATHER,)))
    assert json.loads(response.text)["city"] == "Paris" and response.tool_calls == ()
    body = api.seen[model][0].body
    assert [t["name"] for t in body["tools"]] == ["get_weather", "final_output"]
    assert body["tools"][1] == FINAL_TOOL
    assert body["tool_choice"] == {"type": "auto"}
    assert body["system"] == f"Be brief.\n\n{structured.OUTPUT_TOOL_HINT}"


def test_anthropic_with_thinking_is_never_forced(api: FakeAPI, client: httpx.Client) -> None:
    model = api.script(sse(ANTHROPIC_FINAL))
    anthropic(api, client).complete(asking(model, STRICT, options=THINKING_ON))
    body = api.seen[model][0].body
    assert body["tool_choice"] == {"type": "auto"}
    assert body["thinking"] == THINKING_ON["thinking"]


def test_anthropic_output_tool_beside_other_calls_is_dropped(
    api: FakeAPI, client: httpx.Client
) -> None:
    model = api.script(sse(ANTHROPIC_TOOL_AND_FINAL))
    response = anthropic(api, client).complete(asking(model, STRICT, tools=(WEATHER,)))
    assert response.tool_calls == (
        ToolCall(id="toolu_01W", name="get_weather", arguments={"city": "Paris"}),
    )
    assert response.text == ""


def test_anthropic_unwraps_a_non_object_schema(api: FakeAPI, client: httpx.Client) -> None:
    stream = ANTHROPIC_FINAL.replace(
        rb'"partial_json":"{\"city\": \"Paris\", \"cel"',
        rb'"partial_json":"{\"output\": [\"Paris\", "',
    ).replace(rb'"partial_json":"sius\": 18, \"sky\": \"sunny\"}"', rb'"partial_json":"\"Oslo\"]}"')
    model = api.script(sse(stream))
    response = anthropic(api, client).complete(asking(model, LIST))
    assert json.loads(response.text) == ["Paris", "Oslo"]
    assert api.seen[model][0].body["tools"][0]["input_schema"]["properties"] == {"output": LIST}


def test_anthropic_cut_off_answer_stays_text(api: FakeAPI, client: httpx.Client) -> None:
    """An answer cut off at max_tokens is not JSON: it comes back as text for the
    settlement (and the lead's corrective retry) to judge, not as a failed call."""
    stream = ANTHROPIC_FINAL.replace(
        rb'"partial_json":"sius\": 18, \"sky\": \"sunny\"}"', rb'"partial_json":"sius\": 1"'
    ).replace(b'"stop_reason":"tool_use"', b'"stop_reason":"max_tokens"')
    response = anthropic(api, client).complete(asking(api.script(sse(stream)), STRICT))
    assert response.text == '{"city": "Paris", "celsius": 1'
    assert response.stop_reason == "max_tokens"


def test_the_output_tool_name_is_reserved(api: FakeAPI, client: httpx.Client) -> None:
    model = api.script()
    clash = ToolSpec("final_output", "mine", {"type": "object", "properties": {}})
    with pytest.raises(PermanentModelError, match="reserved"):
        anthropic(api, client).complete(asking(model, STRICT, tools=(clash,)))
    assert api.seen[model] == []


# ---------------------------------------------------------------- provider metadata: thinking

SIGNATURE = "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds+/9y8Rh8z2S/mUD4IRAMOCVB4rPx5kf12bsl6b1Yw=="
THINKING_TEXT = (
    'The user asks about Paris \u2014 "18\u00b0C"? I should call get_weather.\\n\u2028Then answer.'
)
REDACTED = (
    "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpPkNRj2YfWXGmKDxH4mPnZ5sQ7vB8=="
)

ANTHROPIC_THINKING = (
    b"""event: message_start
data: {"type":"message_start","message":{"id":"msg_01Think","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":512,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":4}}}

event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"The user asks about Paris \\u2014 \\"18\xc2\xb0C\\"? "}}

event: ping
data: {"type": "ping"}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"I should call get_weather.\\\\n\xe2\x80\xa8Then answer."}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":\""""
    + SIGNATURE[:40].encode()
    + b""""}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":\""""
    + SIGNATURE[40:].encode()
    + b""""}}

event: content_block_stop
data: {"type":"content_block_stop","index":0}

event: content_block_start
data: {"type":"content_block_start","index":1,"content_block":{"type":"redacted_thinking","data":\""""
    + REDACTED.encode()
    + b""""}}

event: content_block_stop
data: {"type":"content_block_stop","index":1}

event: content_block_start
data: {"type":"content_block_start","index":2,"content_block":{"type":"text","text":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":2,"delta":{"type":"text_delta","text":"Checking."}}

event: content_block_stop
data: {"type":"content_block_stop","index":2}

event: content_block_start
data: {"type":"content_block_start","index":3,"content_block":{"type":"tool_use","id":"toolu_01Pa","name":"get_weather","input":{}}}

event: content_block_delta
data: {"type":"content_block_delta","index":3,"delta":{"type":"input_json_delta","partial_json":"{\\"city\\": \\"Paris\\"}"}}

event: content_block_stop
data: {"type":"content_block_stop","index":3}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":187}}

event: message_stop
data: {"type":"message_stop"}

"""
)
THINKING_BLOCK = {"type": "thinking", "thinking": THINKING_TEXT, "signature": SIGNATURE}
REDACTED_BLOCK = {"type": "redacted_thinking", "data": REDACTED}


def journal_round_trip(message: Message) -> Message:
    """As the journal stores and reloads it (JSONB may reorder keys)."""
    return Message.from_json(json.loads(json.dumps(message.to_json(), sort_keys=True)))


THINKING_ON = {"thinking": {"type": "enabled", "budget_tokens": 2048}}


def after_tool(
    assistant: Message, model: str, options: dict[str, Any] | None = None
) -> ModelRequest:
    """The next call of the turn: the tool's result is in."""
    return ModelRequest(
        model=model,
        instructions="Be brief.",
        messages=(
            Message(Role.USER, PROMPT),
            assistant,
            Message(Role.TOOL, "18C, sunny", tool_call_id="toolu_01Pa", name="get_weather"),
        ),
        tools=(WEATHER,),
        options=THINKING_ON if options is None else options,
    )


def thinking_turn(api: FakeAPI, client: httpx.Client) -> tuple[ModelResponse, list[str]]:
    deltas: list[str] = []
    response = anthropic(api, client).complete(
        asking(api.script(sse(ANTHROPIC_THINKING, piece=13)), None, tools=(WEATHER,)),
        on_delta=deltas.append,
    )
    return response, deltas


def test_anthropic_thinking_is_kept_in_the_envelope(api: FakeAPI, client: httpx.Client) -> None:
    response, deltas = thinking_turn(api, client)
    assert deltas == ["Checking."]  # thinking is never a live text delta
    assert response.text == "Checking."
    assert response.tool_calls == (
        ToolCall(id="toolu_01Pa", name="get_weather", arguments={"city": "Paris"}),
    )
    meta = response.provider_meta
    assert meta is not None
    assert meta["blocks"] == [THINKING_BLOCK, REDACTED_BLOCK]
    assert meta["blocks"][0]["signature"] == SIGNATURE
    assert (meta["v"], meta["provider"], meta["model"]) == (
        1,
        "anthropic",
        "claude-sonnet-4-5-20250929",
    )
    message = response.to_message()
    assert message.provider_meta == meta
    # the journal keeps the message without it: the envelope is kept apart
    # (provider_state, tests/integration/test_provider_state.py), put back for a request
    kept, state = journal_form(message)
    assert state == meta and "provider_meta" not in kept
    assert Message.from_json(with_state(kept, state)) == message
    # and should an event older than migration 0017 hold one, delivery does not show it
    data: dict[str, Any] = {"message": message.to_json(), "model": response.model}
    assert "provider_meta" not in public_event_data(data)["message"]


def test_the_next_anthropic_request_hands_thinking_back_unchanged(
    api: FakeAPI, client: httpx.Client
) -> None:
    response, _ = thinking_turn(api, client)
    assistant = journal_round_trip(response.to_message())
    model = api.script(sse(ANTHROPIC_TEXT))
    anthropic(api, client).complete(after_tool(assistant, model))
    body = api.seen[model][0].body
    assert body["messages"][1] == {
        "role": "assistant",
        "content": [
            THINKING_BLOCK,
            REDACTED_BLOCK,
            {"type": "text", "text": "Checking."},
            {
                "type": "tool_use",
                "id": "toolu_01Pa",
                "name": "get_weather",
                "input": {"city": "Paris"},
            },
        ],
    }
    sent = body["messages"][1]["content"][0]
    # byte for byte: the strings as the stream delivered them, in UTF-8
    assert sent["thinking"].encode() == THINKING_TEXT.encode()
    assert sent["signature"].encode() == SIGNATURE.encode()
    assert body["messages"][2]["content"][0]["type"] == "tool_result"


def test_an_openai_request_from_the_same_history_carries_no_trace(
    api: FakeAPI, client: httpx.Client
) -> None:
    response, _ = thinking_turn(api, client)
    assistant = journal_round_trip(response.to_message())
    model = api.script(sse(OPENAI_TEXT))
    openai(api, client).complete(after_tool(assistant, model, options={}))
    body = api.seen[model][0].body
    raw = json.dumps(body, ensure_ascii=False)
    for trace in (
        "provider_meta",
        "thinking",
        "signature",
        "redacted",
        SIGNATURE,
        REDACTED,
        "18°C",
    ):
        assert trace not in raw
    assert body["messages"][2] == {
        "role": "assistant",
        "content": "Checking.",
        "tool_calls": [
            {
                "id": "toolu_01Pa",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
            }
        ],
    }


def test_altered_thinking_is_dropped_not_sent(api: FakeAPI, client: httpx.Client) -> None:
    """Redaction in the journal may rewrite a thinking block: its signature no longer
    matches, and sending it would fail every later request of the session."""
    response, _ = thinking_turn(api, client)
    stored = response.to_message().to_json()
    stored["provider_meta"]["blocks"][0]["thinking"] = "[REDACTED]"
    body = anthropic_payload(after_tool(Message.from_json(stored), "m"))
    assert [b["type"] for b in body["messages"][1]["content"]] == ["text", "tool_use"]


def test_other_providers_and_newer_envelopes_are_not_sent(
    api: FakeAPI, client: httpx.Client
) -> None:
    response, _ = thinking_turn(api, client)
    meta = response.provider_meta
    assert meta is not None
    for foreign in ({**meta, "provider": "openai"}, {**meta, "v": 2}):
        message = Message(Role.ASSISTANT, "Checking.", provider_meta=foreign)
        body = anthropic_payload(after_tool(message, "m"))
        assert body["messages"][1]["content"] == [{"type": "text", "text": "Checking."}]


def test_cache_control_marks_the_last_block() -> None:
    user = with_cache_control(Message(Role.USER, "A long document..."))
    assistant = with_cache_control(
        Message(
            Role.ASSISTANT, "", tool_calls=(ToolCall("toolu_1", "get_weather", {"city": "Oslo"}),)
        )
    )
    request = ModelRequest(model="m", instructions="", messages=(user, assistant))
    body = anthropic_payload(request)
    assert body["messages"][0]["content"] == [
        {"type": "text", "text": "A long document...", "cache_control": {"type": "ephemeral"}}
    ]
    assert body["messages"][1]["content"][-1]["cache_control"] == {"type": "ephemeral"}
    # the marker is this provider's: OpenAI's request is as without it
    assert openai_payload(request)["messages"] == [
        {"role": "user", "content": "A long document..."},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "toolu_1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'},
                }
            ],
        },
    ]
