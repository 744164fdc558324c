"""The OpenAI and Anthropic adapters against a local server speaking each real wire format.

The server (Starlette under uvicorn, on 127.0.0.1 only) replays byte streams shaped
as the real APIs send them, records every request it gets, and can fail the way
the real services do: error statuses with their real bodies, in-stream error
events, connections cut mid-body, stalls. Each test scripts its own replies under a
unique model name, which is how the server tells the tests' requests apart.
"""

# The fixtures reproduce the APIs' one-line JSON events byte for byte, so lines run long.
# ruff: noqa: E501

from __future__ import annotations

import asyncio
import email.utils
import json
import socket
import threading
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from tests.procs import wait_for
from turnkeep.runtime import pricing
from turnkeep.runtime.errors import (
    ContextOverflow,
    DefinitionError,
    ModelError,
    PermanentModelError,
    ProviderRateLimited,
    TransientModelError,
)
from turnkeep.runtime.messages import Message, ModelRequest, Role, ToolCall, ToolSpec, Usage
from turnkeep.runtime.providers import registry
from turnkeep.runtime.providers.anthropic import AnthropicMessagesProvider
from turnkeep.runtime.providers.base import Provider
from turnkeep.runtime.providers.openai import OpenAIChatProvider
from turnkeep.runtime.providers.retry import RetryingProvider
from turnkeep.runtime.signals import ModelCallCancelled

pytestmark = pytest.mark.timeout(60)

KEY = "sk-test-7f3a9c-very-secret"
PROMPT = "What is the weather in Paris and Oslo? (private prompt text)"
SSE_HEADERS = {"cache-control": "no-cache"}

# ---------------------------------------------------------------- the local server


@dataclass
class Seen:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


Reply = Callable[["FakeAPI", str], Response]


class FakeAPI:
    """Serves scripted replies per model name and records what it was sent."""

    def __init__(self) -> None:
        self.base = ""
        self.lock = threading.Lock()
        self.scripts: dict[str, list[Reply]] = {}
        self.seen: dict[str, list[Seen]] = {}
        self.sent: dict[str, int] = {}

    def script(self, *replies: Reply) -> str:
        model = f"model-{uuid.uuid4().hex[:10]}"
        with self.lock:
            self.scripts[model], self.seen[model], self.sent[model] = list(replies), [], 0
        return model

    async def handle(self, request: Request) -> Response:
        body = await request.json()
        model = body["model"]
        with self.lock:
            self.seen[model].append(Seen(request.url.path, dict(request.headers), body))
            reply = self.scripts[model].pop(0)
        return reply(self, model)


class Raw(Response):
    """Sends a status and body pieces after a pause, optionally never finishing the body
    (uvicorn then closes the connection mid-body: a cut connection as clients see it)."""

    def __init__(self, pieces: list[bytes], *, pause: float = 0.0, finish: bool = True) -> None:
        self.pieces, self.pause, self.finish = pieces, pause, finish

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await asyncio.sleep(self.pause)
        headers = [(b"content-type", b"text/event-stream; charset=utf-8")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        for piece in self.pieces:
            await send({"type": "http.response.body", "body": piece, "more_body": True})
        if self.finish:
            await send({"type": "http.response.body", "body": b"", "more_body": False})


def events(stream: bytes) -> list[bytes]:
    """One write per SSE event, as the real servers flush them."""
    parts = stream.split(b"\n\n")
    return [p + b"\n\n" for p in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


def sse(stream: bytes, *, piece: int = 0, delay: float = 0.0) -> Reply:
    """200 text/event-stream; ``piece`` chops it into fixed-size writes instead."""
    chunks = (
        [stream[i : i + piece] for i in range(0, len(stream), piece)] if piece else events(stream)
    )

    def reply(api: FakeAPI, model: str) -> Response:
        async def body() -> AsyncIterator[bytes]:
            for chunk in chunks:
                yield chunk
                api.sent[model] += 1
                if delay:
                    await asyncio.sleep(delay)

        return StreamingResponse(body(), media_type="text/event-stream", headers=SSE_HEADERS)

    return reply


def status(code: int, body: bytes, headers: dict[str, str] | None = None) -> Reply:
    return lambda api, model: Response(
        body, status_code=code, headers=headers, media_type="application/json"
    )


def cut(stream: bytes) -> Reply:
    return lambda api, model: Raw(events(stream), finish=False)


def stall(seconds: float) -> Reply:
    return lambda api, model: Raw([], pause=seconds)


@contextmanager
def serve() -> Iterator[FakeAPI]:
    """A FakeAPI on a free local port, for the length of the block."""
    fake = FakeAPI()
    app = Starlette(
        routes=[
            Route("/v1/chat/completions", fake.handle, methods=["POST"]),
            Route("/v1/messages", fake.handle, methods=["POST"]),
        ]
    )
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    config = uvicorn.Config(
        app,
        log_level="critical",
        http="h11",
        ws="none",
        loop="asyncio",
        lifespan="off",
        timeout_graceful_shutdown=1,
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started:
        assert time.monotonic() < deadline, "local server did not start"
        time.sleep(0.01)
    fake.base = f"http://127.0.0.1:{sock.getsockname()[1]}"
    try:
        yield fake
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


@pytest.fixture(scope="module")
def api() -> Iterator[FakeAPI]:
    with serve() as fake:
        yield fake


@pytest.fixture(scope="module")
def client() -> Iterator[httpx.Client]:
    with httpx.Client() as c:
        yield c


def openai(api: FakeAPI, client: httpx.Client, timeout: float = 5.0) -> OpenAIChatProvider:
    return OpenAIChatProvider(api.base + "/v1", KEY, timeout=timeout, client=client)


def anthropic(
    api: FakeAPI, client: httpx.Client, timeout: float = 5.0
) -> AnthropicMessagesProvider:
    return AnthropicMessagesProvider(api.base, KEY, timeout=timeout, client=client)


WEATHER = ToolSpec(
    name="get_weather",
    description="Current weather for a city.",
    parameters={"type": "object", "properties": {"city": {"type": "string"}}},
)


def simple(model: str) -> ModelRequest:
    return ModelRequest(
        model=model, instructions="Be brief.", messages=(Message(Role.USER, PROMPT),)
    )


def conversation(model: str) -> ModelRequest:
    """A turn mid-way: two tool calls answered (one failed), then a follow-up."""
    calls = (
        ToolCall(id="call_1", name="get_weather", arguments={"city": "Paris"}),
        ToolCall(id="call_2", name="get_weather", arguments={"city": "Oslo"}),
    )
    return ModelRequest(
        model=model,
        instructions="Be brief.",
        messages=(
            Message(Role.SYSTEM, "Answer in English."),
            Message(Role.USER, PROMPT),
            Message(Role.ASSISTANT, "", tool_calls=calls),
            Message(Role.TOOL, "18C, sunny", tool_call_id="call_1", name="get_weather"),
            Message(Role.TOOL, "timed out", tool_call_id="call_2", is_error=True),
            Message(Role.ASSISTANT, "Paris is 18C; Oslo timed out."),
            Message(Role.USER, "Thanks!"),
        ),
        tools=(WEATHER,),
        max_output_tokens=256,
        options={"temperature": 0.2, "stream": False},
    )


def failure(provider: Provider, model: str) -> ModelError:
    with pytest.raises(ModelError) as info:
        provider.complete(simple(model))
    text = str(info.value)
    assert KEY not in text and "private prompt" not in text
    return info.value


# ---------------------------------------------------------------- OpenAI Chat Completions

OPENAI_TEXT = (
    b'data: {"id":"chatcmpl-AqZ1","object":"chat.completion.chunk","created":1736000000,'
    b'"model":"gpt-4o-2024-08-06","service_tier":"default","system_fingerprint":"fp_f785eb5f47",'
    b'"choices":[{"index":0,"delta":{"role":"assistant","content":"","refusal":null},'
    b'"logprobs":null,"finish_reason":null}],"usage":null}\n\n'
    b'data: {"id":"chatcmpl-AqZ1","object":"chat.completion.chunk","created":1736000000,'
    b'"model":"gpt-4o-2024-08-06","service_tier":"default","system_fingerprint":"fp_f785eb5f47",'
    b'"choices":[{"index":0,"delta":{"content":"Paris: 18\xc2\xb0C "},"logprobs":null,'
    b'"finish_reason":null}],"usage":null}\n\n'
    b'data: {"id":"chatcmpl-AqZ1","object":"chat.completion.chunk","created":1736000000,'
    b'"model":"gpt-4o-2024-08-06","service_tier":"default","system_fingerprint":"fp_f785eb5f47",'
    b'"choices":[{"index":0,"delta":{"content":"\xe2\x98\x80\xef\xb8\x8f\xe2\x80\xa8and"},'
    b'"logprobs":null,"finish_reason":null}],"usage":null}\n\n'
    b'data: {"id":"chatcmpl-AqZ1","object":"chat.completion.chunk","created":1736000000,'
    b'"model":"gpt-4o-2024-08-06","service_tier":"default","system_fingerprint":"fp_f785eb5f47",'
    b'"choices":[{"index":0,"delta":{"content":" sunny."},"logprobs":null,'
    b'"finish_reason":null}],"usage":null}\n\n'
    b'data: {"id":"chatcmpl-AqZ1","object":"chat.completion.chunk","created":1736000000,'
    b'"model":"gpt-4o-2024-08-06","service_tier":"default","system_fingerprint":"fp_f785eb5f47",'
    b'"choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}],'
    b'"usage":null}\n\n'
    b'data: {"id":"chatcmpl-AqZ1","object":"chat.completion.chunk","created":1736000000,'
    b'"model":"gpt-4o-2024-08-06","service_tier":"default","system_fingerprint":"fp_f785eb5f47",'
    b'"choices":[],"usage":{"prompt_tokens":31,"completion_tokens":9,"total_tokens":40,'
    b'"prompt_tokens_details":{"cached_tokens":0,"audio_tokens":0},'
    b'"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,'
    b'"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}}}\n\n'
    b"data: [DONE]\n\n"
)
OPENAI_DELTAS = ["Paris: 18\u00b0C ", "\u2600\ufe0f\u2028and", " sunny."]


def _oa(delta: bytes, finish: bytes = b"null") -> bytes:
    return (
        b'data: {"id":"chatcmpl-AqZ2","object":"chat.completion.chunk","created":1736000001,'
        b'"model":"gpt-4o-2024-08-06","system_fingerprint":"fp_f785eb5f47","choices":[{"index":0,'
        b'"delta":'
        + delta
        + b',"logprobs":null,"finish_reason":'
        + finish
        + b'}],"usage":null}\n\n'
    )


# Two parallel calls, argument fragments interleaved across calls, as gpt-4o streams them.
OPENAI_TOOLS = (
    _oa(
        b'{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_Pa1",'
        b'"type":"function","function":{"name":"get_weather","arguments":""}}],"refusal":null}'
    )
    + _oa(rb'{"tool_calls":[{"index":0,"function":{"arguments":"{\"ci"}}]}')
    + _oa(rb'{"tool_calls":[{"index":0,"function":{"arguments":"ty\": \"Par"}}]}')
    + _oa(
        b'{"tool_calls":[{"index":1,"id":"call_Os2","type":"function",'
        b'"function":{"name":"get_weather","arguments":""}}]}'
    )
    + _oa(rb'{"tool_calls":[{"index":1,"function":{"arguments":"{\"city\": \"Oslo\"}"}}]}')
    + _oa(rb'{"tool_calls":[{"index":0,"function":{"arguments":"is\"}"}}]}')
    + _oa(b"{}", b'"tool_calls"')
    + b'data: {"id":"chatcmpl-AqZ2","object":"chat.completion.chunk","created":1736000001,'
    b'"model":"gpt-4o-2024-08-06","system_fingerprint":"fp_f785eb5f47","choices":[],'
    b'"usage":{"prompt_tokens":80,"completion_tokens":44,"total_tokens":124}}\n\n'
    b"data: [DONE]\n\n"
)

OPENAI_429 = b"""{
    "error": {
        "message": "Rate limit reached for gpt-4o in organization org-x on tokens per min (TPM): Limit 30000, Used 29760, Requested 1234. Please try again in 2.428s.",
        "type": "tokens",
        "param": null,
        "code": "rate_limit_exceeded"
    }
}
"""
OPENAI_QUOTA = b"""{
    "error": {
        "message": "You exceeded your current quota, please check your plan and billing details.",
        "type": "insufficient_quota",
        "param": null,
        "code": "insufficient_quota"
    }
}
"""
OPENAI_500 = b"""{
    "error": {
        "message": "The server had an error while processing your request. Sorry about that!",
        "type": "server_error",
        "param": null,
        "code": null
    }
}
"""
OPENAI_OVERFLOW = b"""{
  "error": {
    "message": "This model's maximum context length is 128000 tokens. However, your messages resulted in 130321 tokens. Please reduce the length of the messages.",
    "type": "invalid_request_error",
    "param": "messages",
    "code": "context_length_exceeded"
  }
}
"""
# Real 4xx messages can quote the request (and a masked key); neither may reach our errors.
OPENAI_401 = (
    b'{\n    "error": {\n        "message": "Incorrect API key provided: '
    + KEY.encode()
    + b" for prompt: "
    + PROMPT.encode()
    + b'",\n        "type": "invalid_request_error",\n        "param": null,\n'
    b'        "code": "invalid_api_key"\n    }\n}\n'
)


def test_openai_streams_text_and_usage(api: FakeAPI, client: httpx.Client) -> None:
    # 5-byte writes split the multi-byte characters (and U+2028) across reads.
    model = api.script(sse(OPENAI_TEXT, piece=5))
    deltas: list[str] = []
    response = openai(api, client).complete(simple(model), on_delta=deltas.append)
    assert deltas == OPENAI_DELTAS
    assert response.text == "".join(OPENAI_DELTAS)
    assert response.tool_calls == ()
    assert (response.usage.input_tokens, response.usage.output_tokens) == (31, 9)
    assert response.model == "gpt-4o-2024-08-06"
    assert response.stop_reason == "stop"
    (seen,) = api.seen[model]
    assert seen.path == "/v1/chat/completions"
    assert seen.headers["authorization"] == f"Bearer {KEY}"
    assert seen.headers["content-type"] == "application/json"


def test_openai_assembles_streamed_tool_calls_and_maps_the_request(
    api: FakeAPI, client: httpx.Client
) -> None:
    model = api.script(sse(OPENAI_TOOLS))
    deltas: list[str] = []
    response = openai(api, client).complete(conversation(model), on_delta=deltas.append)
    assert deltas == [] and response.text == ""
    assert response.tool_calls == (
        ToolCall(id="call_Pa1", name="get_weather", arguments={"city": "Paris"}),
        ToolCall(id="call_Os2", name="get_weather", arguments={"city": "Oslo"}),
    )
    assert response.stop_reason == "tool_calls"
    assert (response.usage.input_tokens, response.usage.output_tokens) == (80, 44)

    body = api.seen[model][0].body
    assistant = body["messages"][3]
    args = [json.loads(c["function"].pop("arguments")) for c in assistant["tool_calls"]]
    assert args == [{"city": "Paris"}, {"city": "Oslo"}]
    assert body == {
        "model": model,
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "system", "content": "Answer in English."},
            {"role": "user", "content": PROMPT},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "call_1", "type": "function", "function": {"name": "get_weather"}},
                    {"id": "call_2", "type": "function", "function": {"name": "get_weather"}},
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": "18C, sunny"},
            {"role": "tool", "tool_call_id": "call_2", "content": "ERROR: timed out"},
            {"role": "assistant", "content": "Paris is 18C; Oslo timed out."},
            {"role": "user", "content": "Thanks!"},
        ],
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "get_weather",
                    "description": "Current weather for a city.",
                    "parameters": WEATHER.parameters,
                },
            }
        ],
        "stream": True,
        "stream_options": {"include_usage": True},
        "max_completion_tokens": 256,
        "temperature": 0.2,
    }


@pytest.mark.parametrize(
    ("reply", "kind", "retry_after"),
    [
        # a 429 is transient, and a rate limit's (fed to a declared one: worker/pace.py)
        (
            status(429, OPENAI_429, {"retry-after": "3", "x-request-id": "req_1"}),
            ProviderRateLimited,
            3.0,
        ),
        (status(429, OPENAI_429, {"retry-after-ms": "1500"}), ProviderRateLimited, 1.5),
        (status(500, OPENAI_500), TransientModelError, None),
        (status(503, b"upstream connect error"), TransientModelError, None),
        (status(400, OPENAI_OVERFLOW), ContextOverflow, None),
        (status(429, OPENAI_QUOTA), PermanentModelError, None),
        (status(401, OPENAI_401), PermanentModelError, None),
        (
            status(
                404,
                b'{"error":{"message":"no","type":"invalid_request_error","code":"model_not_found"}}',
            ),
            PermanentModelError,
            None,
        ),
        (cut(OPENAI_TEXT[:700]), TransientModelError, None),
        (sse(OPENAI_TEXT[:700]), TransientModelError, None),  # clean close before [DONE]
        (
            sse(
                b'data: {"error":{"message":"The server had an error while processing your request.","type":"server_error","param":null,"code":null}}\n\n'
            ),
            TransientModelError,
            None,
        ),
        (
            sse(
                b'data: {"error":{"message":"too long","type":"invalid_request_error","param":null,"code":"context_length_exceeded"}}\n\n'
            ),
            ContextOverflow,
            None,
        ),
        (sse(b"data: {not json\n\n"), PermanentModelError, None),
        (
            sse(
                _oa(
                    rb'{"tool_calls":[{"index":0,"id":"c","function":{"name":"f","arguments":"{\"a\":"}}]}'
                )
                + b"data: [DONE]\n\n"
            ),
            PermanentModelError,
            None,
        ),
        (status(200, b'{"id":"chatcmpl-x","choices":[]}'), PermanentModelError, None),
    ],
)
def test_openai_failures_are_classified(
    api: FakeAPI,
    client: httpx.Client,
    reply: Reply,
    kind: type[ModelError],
    retry_after: float | None,
) -> None:
    error = failure(openai(api, client), api.script(reply))
    assert type(error) is kind
    if isinstance(error, TransientModelError):
        assert error.retry_after == retry_after
    assert "openai" in str(error)


# ---------------------------------------------------------------- Anthropic Messages

ANTHROPIC_TEXT = b"""event: message_start
data: {"type":"message_start","message":{"id":"msg_01XFDUDYJgAACzvnptvVoYEL","type":"message","role":"assistant","content":[],"model":"claude-sonnet-4-5-20250929","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":25,"cache_creation_input_tokens":0,"cache_read_input_tokens":10,"output_tokens":1}}}

event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}

event: ping
data: {"type": "ping"}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Paris: 18\xc2\xb0C"}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":", sunny \xe2\x98\x80"}}

event: content_block_stop
data: {"type":"content_block_stop","index":0}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":12}}

event: message_stop
data: {"type":"message_stop"}

"""
ANTHROPIC_DELTAS = ["Paris: 18\u00b0C", ", sunny \u2600"]

ANTHROPIC_TOOLS = rb"""event: message_start
data: {"type":"message_start","message":{"id":"msg_014p7gG3wDgGV9EUtLvnow3U","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929","stop_sequence":null,"usage":{"input_tokens":472,"output_tokens":2},"content":[],"stop_reason":null}}

event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}

event: ping
data: {"type": "ping"}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Checking both."}}

event: content_block_stop
data: {"type":"content_block_stop","index":0}

event: content_block_start
data: {"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_01T1x1fJ34qAmk2tNTrN7Up6","name":"get_weather","input":{}}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"city\": \"Pa"}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"ris\"}"}}

event: content_block_stop
data: {"type":"content_block_stop","index":1}

event: content_block_start
data: {"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_02Oslo","name":"get_weather","input":{}}}

event: content_block_delta
data: {"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"city\": \"Oslo\"}"}}

event: content_block_stop
data: {"type":"content_block_stop","index":2}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":89}}

event: message_stop
data: {"type":"message_stop"}

"""


def _anthropic_error(kind: str, message: str) -> bytes:
    return json.dumps({"type": "error", "error": {"type": kind, "message": message}}).encode()


ANTHROPIC_OVERLOADED_EVENT = (
    b'event: error\ndata: {"type": "error", "error": {"type": "overloaded_error", '
    b'"message": "Overloaded"}}\n\n'
)


def test_anthropic_streams_text_and_usage(api: FakeAPI, client: httpx.Client) -> None:
    model = api.script(sse(ANTHROPIC_TEXT, piece=7))
    deltas: list[str] = []
    response = anthropic(api, client).complete(simple(model), on_delta=deltas.append)
    assert deltas == ANTHROPIC_DELTAS
    assert response.text == "".join(ANTHROPIC_DELTAS)
    assert response.tool_calls == ()
    # cached prompt tokens count as input
    assert (response.usage.input_tokens, response.usage.output_tokens) == (35, 12)
    assert response.model == "claude-sonnet-4-5-20250929"
    assert response.stop_reason == "end_turn"
    (seen,) = api.seen[model]
    assert seen.path == "/v1/messages"
    assert seen.headers["x-api-key"] == KEY
    assert seen.headers["anthropic-version"] == "2023-06-01"
    assert "authorization" not in seen.headers
    assert seen.body == {
        "model": model,
        "max_tokens": 4096,
        "stream": True,
        "system": "Be brief.",
        "messages": [{"role": "user", "content": [{"type": "text", "text": PROMPT}]}],
    }


def test_anthropic_assembles_tool_use_and_maps_the_request(
    api: FakeAPI, client: httpx.Client
) -> None:
    model = api.script(sse(ANTHROPIC_TOOLS))
    deltas: list[str] = []
    response = anthropic(api, client).complete(conversation(model), on_delta=deltas.append)
    assert deltas == ["Checking both."]
    assert response.text == "Checking both."
    assert response.tool_calls == (
        ToolCall(
            id="toolu_01T1x1fJ34qAmk2tNTrN7Up6", name="get_weather", arguments={"city": "Paris"}
        ),
        ToolCall(id="toolu_02Oslo", name="get_weather", arguments={"city": "Oslo"}),
    )
    assert response.stop_reason == "tool_use"
    assert (response.usage.input_tokens, response.usage.output_tokens) == (472, 89)
    assert api.seen[model][0].body == {
        "model": model,
        "max_tokens": 256,
        "stream": True,
        "temperature": 0.2,
        "system": "Be brief.\n\nAnswer in English.",
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": PROMPT}]},
            {
                "role": "assistant",
                "content": [
                    {
                        "type": "tool_use",
                        "id": "call_1",
                        "name": "get_weather",
                        "input": {"city": "Paris"},
                    },
                    {
                        "type": "tool_use",
                        "id": "call_2",
                        "name": "get_weather",
                        "input": {"city": "Oslo"},
                    },
                ],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "call_1", "content": "18C, sunny"},
                    {
                        "type": "tool_result",
                        "tool_use_id": "call_2",
                        "content": "timed out",
                        "is_error": True,
                    },
                ],
            },
            {
                "role": "assistant",
                "content": [{"type": "text", "text": "Paris is 18C; Oslo timed out."}],
            },
            {"role": "user", "content": [{"type": "text", "text": "Thanks!"}]},
        ],
        "tools": [
            {
                "name": "get_weather",
                "description": "Current weather for a city.",
                "input_schema": WEATHER.parameters,
            }
        ],
    }


def _in_30s() -> Reply:
    def reply(api: FakeAPI, model: str) -> Response:
        when = email.utils.formatdate(time.time() + 30, usegmt=True)
        body = _anthropic_error(
            "rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit"
        )
        return Response(body, 429, {"retry-after": when}, media_type="application/json")

    return reply


@pytest.mark.parametrize(
    ("reply", "kind", "retry_after"),
    [
        (
            status(
                429,
                _anthropic_error("rate_limit_error", "rate limited"),
                {"retry-after": "12", "request-id": "req_011"},
            ),
            ProviderRateLimited,
            12.0,
        ),
        (
            status(529, _anthropic_error("overloaded_error", "Overloaded")),
            TransientModelError,
            None,
        ),
        (
            status(500, _anthropic_error("api_error", "Internal server error")),
            TransientModelError,
            None,
        ),
        (
            status(
                400,
                _anthropic_error(
                    "invalid_request_error", "prompt is too long: 208310 tokens > 200000 maximum"
                ),
            ),
            ContextOverflow,
            None,
        ),
        (
            status(
                413,
                _anthropic_error(
                    "request_too_large", "Request exceeds the maximum allowed number of bytes."
                ),
            ),
            ContextOverflow,
            None,
        ),
        (
            status(
                400,
                _anthropic_error("invalid_request_error", f"messages.0.content: bad text {PROMPT}"),
            ),
            PermanentModelError,
            None,
        ),
        (
            status(401, _anthropic_error("authentication_error", f"invalid x-api-key {KEY}")),
            PermanentModelError,
            None,
        ),
        (
            sse(ANTHROPIC_TEXT.split(b"event: content_block_stop")[0] + ANTHROPIC_OVERLOADED_EVENT),
            TransientModelError,
            None,
        ),
        (
            sse(
                b'event: error\ndata: {"type":"error","error":{"type":"invalid_request_error","message":"bad"}}\n\n'
            ),
            PermanentModelError,
            None,
        ),
        (cut(ANTHROPIC_TEXT[:900]), TransientModelError, None),
        (sse(ANTHROPIC_TEXT.split(b"event: message_stop")[0]), TransientModelError, None),
        (
            sse(
                b'event: content_block_delta\ndata: {"type":"content_block_delta","index":5,"delta":{"type":"text_delta","text":"x"}}\n\n'
            ),
            PermanentModelError,
            None,
        ),
    ],
)
def test_anthropic_failures_are_classified(
    api: FakeAPI,
    client: httpx.Client,
    reply: Reply,
    kind: type[ModelError],
    retry_after: float | None,
) -> None:
    error = failure(anthropic(api, client), api.script(reply))
    assert type(error) is kind
    if isinstance(error, TransientModelError):
        assert error.retry_after == retry_after
    assert "anthropic" in str(error)


def test_anthropic_retry_after_as_http_date(api: FakeAPI, client: httpx.Client) -> None:
    error = failure(anthropic(api, client), api.script(_in_30s()))
    assert isinstance(error, TransientModelError)
    assert error.retry_after is not None and 27.0 <= error.retry_after <= 30.0


# ---------------------------------------------------------------- both: cancellation, timeouts


def _long_openai(n: int) -> bytes:
    return b"".join(_oa(b'{"content":"tok "}') for _ in range(n)) + b"data: [DONE]\n\n"


def _long_anthropic(n: int) -> bytes:
    head, tail = ANTHROPIC_TEXT.split(b"event: content_block_stop")
    delta = (
        b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,'
        b'"delta":{"type":"text_delta","text":"tok "}}\n\n'
    )
    return head + delta * n + b"event: content_block_stop" + tail


PROVIDERS: dict[str, tuple[Callable[..., Provider], Callable[[int], bytes]]] = {
    "openai": (openai, _long_openai),
    "anthropic": (anthropic, _long_anthropic),
}


@pytest.mark.parametrize("which", PROVIDERS)
def test_should_stop_aborts_mid_stream_and_hangs_up(
    api: FakeAPI, client: httpx.Client, which: str
) -> None:
    build, long_stream = PROVIDERS[which]
    total = len(events(long_stream(300)))
    model = api.script(sse(long_stream(300), delay=0.01))
    deltas: list[str] = []
    with pytest.raises(ModelCallCancelled):
        build(api, client).complete(
            simple(model), on_delta=deltas.append, should_stop=lambda: len(deltas) >= 3
        )
    assert len(deltas) == 3

    # The server notices the hang-up and stops writing long before the end of the stream:
    # its count holds still for half a second (however long noticing took)
    def settled() -> tuple[int] | None:
        before = api.sent[model]
        time.sleep(0.5)
        return (before,) if api.sent[model] == before else None

    (count,) = wait_for(settled, 30, interval=0, what="the server to stop writing")  # type: ignore[misc]
    assert count < total / 2, (count, total)


@pytest.mark.parametrize("which", PROVIDERS)
def test_should_stop_before_the_call_sends_nothing(
    api: FakeAPI, client: httpx.Client, which: str
) -> None:
    model = api.script()
    with pytest.raises(ModelCallCancelled):
        PROVIDERS[which][0](api, client).complete(simple(model), should_stop=lambda: True)
    assert api.seen[model] == []


@pytest.mark.parametrize("which", PROVIDERS)
def test_timeouts_and_refused_connections_are_transient(
    api: FakeAPI, client: httpx.Client, which: str
) -> None:
    build, long_stream = PROVIDERS[which]
    slow = build(api, client, timeout=0.3)
    assert isinstance(failure(slow, api.script(stall(1.5))), TransientModelError)
    # headers and a first event arrive, then the stream goes quiet
    quiet = api.script(sse(long_stream(3), delay=1.5))
    assert isinstance(failure(slow, quiet), TransientModelError)

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    closed = FakeAPI()
    closed.base = f"http://127.0.0.1:{port}"
    assert isinstance(failure(build(closed, client), "m"), TransientModelError)


@pytest.mark.parametrize("which", PROVIDERS)
def test_a_failing_delta_sink_does_not_fail_the_call(
    api: FakeAPI, client: httpx.Client, which: str
) -> None:
    build, long_stream = PROVIDERS[which]
    calls: list[str] = []

    def sink(text: str) -> None:
        calls.append(text)
        raise RuntimeError("live channel down")

    response = build(api, client).complete(simple(api.script(sse(long_stream(4)))), on_delta=sink)
    assert response.text.endswith("tok tok tok tok ")
    assert len(calls) == 1


# ---------------------------------------------------------------- retry and registry end to end


def test_retrying_provider_over_http_honours_retry_after(
    api: FakeAPI, client: httpx.Client
) -> None:
    model = api.script(
        status(429, OPENAI_429, {"retry-after": "5"}),
        status(502, b"<html>Bad Gateway</html>"),
        sse(OPENAI_TEXT),
    )
    sleeps: list[float] = []
    provider = RetryingProvider(openai(api, client), sleep=sleeps.append, rng=lambda: 0.5)
    deltas: list[str] = []
    response = provider.complete(simple(model), on_delta=deltas.append)
    assert response.text == "".join(OPENAI_DELTAS)
    assert sleeps == [5.0, 4.0]
    assert len(api.seen[model]) == 3
    assert deltas == OPENAI_DELTAS


def test_retrying_provider_over_http_gives_up_after_three_retries(
    api: FakeAPI, client: httpx.Client
) -> None:
    model = api.script(*(status(529, _anthropic_error("overloaded_error", "Overloaded")),) * 5)
    sleeps: list[float] = []
    provider = RetryingProvider(anthropic(api, client), sleep=sleeps.append, rng=lambda: 0.5)
    with pytest.raises(TransientModelError):
        provider.complete(simple(model))
    assert len(api.seen[model]) == 4
    assert sleeps == [2.0, 4.0, 8.0]


@pytest.mark.parametrize(
    ("which", "env", "path", "stream"),
    [
        ("openai", "OPENAI", "/v1", OPENAI_TEXT),
        ("anthropic", "ANTHROPIC", "", ANTHROPIC_TEXT),
    ],
)
def test_make_provider_reads_env_and_wraps_in_retry(
    api: FakeAPI, monkeypatch: pytest.MonkeyPatch, which: str, env: str, path: str, stream: bytes
) -> None:
    monkeypatch.setenv(f"TURNKEEP_{env}_BASE_URL", api.base + path)
    monkeypatch.setenv(f"TURNKEEP_{env}_API_KEY", KEY)
    provider = registry.make_provider(which, {"timeout": 5, "temperature": 0.1})
    assert isinstance(provider, RetryingProvider)
    assert provider.name == which
    model = api.script(sse(stream))
    assert provider.complete(simple(model)).text
    seen = api.seen[model][0]
    assert KEY in (seen.headers.get("authorization", "") + seen.headers.get("x-api-key", ""))


def test_make_provider_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(DefinitionError):
        registry.make_provider("no-such-provider", {})
    monkeypatch.delenv("TURNKEEP_OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("TURNKEEP_OPENAI_API_KEY", raising=False)
    with pytest.raises(PermanentModelError, match="TURNKEEP_OPENAI_API_KEY"):
        registry.make_provider("openai", {})
    monkeypatch.setenv("TURNKEEP_OPENAI_API_KEY", KEY)
    with pytest.raises(DefinitionError):
        registry.make_provider("openai", {"timeout": "soon"})


def test_register_provider_hook(api: FakeAPI, client: httpx.Client) -> None:
    built: list[dict[str, Any]] = []

    def factory(options: dict[str, Any]) -> Provider:
        built.append(options)
        return openai(api, client)

    name = f"custom-{uuid.uuid4().hex[:6]}"
    registry.register_provider(name, factory)
    wrapped = registry.make_provider(name, {"x": 1})
    assert isinstance(wrapped, RetryingProvider) and wrapped.name == "openai"
    registry.register_provider(name, factory, retry=False)
    assert isinstance(registry.make_provider(name, {}), OpenAIChatProvider)
    assert built == [{"x": 1}, {}]


# ---------------------------------------------------------------- the responding model, usage, cost

OPENAI_CACHED = (
    _oa(b'{"role":"assistant","content":"ok"}')
    + _oa(b"{}", b'"stop"')
    + b'data: {"id":"chatcmpl-AqZ2","object":"chat.completion.chunk","created":1736000001,'
    b'"model":"gpt-4o-mini-2024-07-18","system_fingerprint":"fp_f785eb5f47","choices":[],'
    b'"usage":{"prompt_tokens":2006,"completion_tokens":300,"total_tokens":2306,'
    b'"prompt_tokens_details":{"cached_tokens":1920,"audio_tokens":0},'
    b'"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,'
    b'"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}}}\n\n'
    b"data: [DONE]\n\n"
)


@pytest.mark.parametrize(
    ("which", "stream", "answered"),
    [
        ("openai", OPENAI_TEXT, "gpt-4o-2024-08-06"),
        ("openai", OPENAI_CACHED, "gpt-4o-mini-2024-07-18"),
        ("anthropic", ANTHROPIC_TEXT, "claude-sonnet-4-5-20250929"),
    ],
)
def test_the_responding_model_is_the_one_the_provider_names(
    api: FakeAPI, client: httpx.Client, which: str, stream: bytes, answered: str
) -> None:
    """What the stream says answered, not what was asked for: the policy check compares
    the two, and the price is the answering model's."""
    model = api.script(sse(stream))
    response = PROVIDERS[which][0](api, client).complete(simple(model))
    assert response.model == answered != model
    price = pricing.cost(response.model, response.usage)
    assert price is not None and price > 0


def test_openai_reports_cached_prompt_tokens(api: FakeAPI, client: httpx.Client) -> None:
    response = openai(api, client).complete(simple(api.script(sse(OPENAI_CACHED))))
    assert response.usage == Usage(
        input_tokens=2006, output_tokens=300, cache_read_tokens=1920, cache_write_tokens=0
    )
    # gpt-4o-mini: 86 at $0.15, 1920 cached at $0.075, 300 out at $0.60 per million
    assert pricing.cost(response.model, response.usage) == pytest.approx(
        (86 * 0.15 + 1920 * 0.075 + 300 * 0.60) / 1e6
    )


def test_anthropic_reports_cache_reads_and_writes(api: FakeAPI, client: httpx.Client) -> None:
    stream = ANTHROPIC_TEXT.replace(
        b'"input_tokens":25,"cache_creation_input_tokens":0,"cache_read_input_tokens":10',
        b'"input_tokens":25,"cache_creation_input_tokens":300,"cache_read_input_tokens":1200',
    )
    response = anthropic(api, client).complete(simple(api.script(sse(stream))))
    assert response.usage == Usage(
        input_tokens=1525, output_tokens=12, cache_read_tokens=1200, cache_write_tokens=300
    )
    assert response.usage.to_json() == {
        "input_tokens": 1525,
        "output_tokens": 12,
        "cache_read_tokens": 1200,
        "cache_write_tokens": 300,
    }


def test_a_stream_that_names_no_model_reports_none(api: FakeAPI, client: httpx.Client) -> None:
    stream = OPENAI_TEXT.replace(b'"model":"gpt-4o-2024-08-06",', b"")
    response = openai(api, client).complete(simple(api.script(sse(stream))))
    assert response.model == ""
    assert pricing.cost(response.model, response.usage) is None
