"""A local model provider speaking the OpenAI Chat Completions wire (streamed) that keeps
a rate limit as a provider does: at most ``requests`` calls and ``tokens`` tokens in
any sliding window of ``window`` seconds. Past either it answers HTTP 429 with
OpenAI's body (``rate_limit_exceeded``), ``retry-after`` and the
``x-ratelimit-*`` headers; every answer carries those headers (``remaining`` and
``reset`` as OpenAI writes them). It records every request it sees, served or
refused, so a test can count them in any window.

A call's tokens, as this server counts them: a quarter of its messages' JSON bytes
(fewer than turnkeep's conservative estimate) plus the reply's ``COMPLETION`` tokens.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

#: tokens of every reply
COMPLETION = 5


@dataclass
class Seen:
    """One request: when it came (monotonic seconds), its tokens, whether it was served,
    and its last message's text (which turn asked)."""

    at: float
    tokens: int
    served: bool
    text: str = ""


@dataclass
class RateLimitedAPI:
    requests: int
    tokens: int
    window: float
    seen: list[Seen] = field(default_factory=list)
    base: str = ""

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._served: deque[tuple[float, int]] = deque()

    # -- what a test reads --------------------------------------------------------

    def served(self) -> list[Seen]:
        with self._lock:
            return [s for s in self.seen if s.served]

    def asked(self, text: str) -> list[Seen]:
        """The requests whose last message is ``text``, served or not."""
        with self._lock:
            return [s for s in self.seen if s.text == text]

    def refused(self) -> int:
        with self._lock:
            return sum(1 for s in self.seen if not s.served)

    def most_in_a_window(self) -> tuple[int, int]:
        """(requests seen, tokens served) in the busiest sliding window."""
        with self._lock:
            seen = list(self.seen)
        most_requests = most_tokens = 0
        start = tokens = 0
        served_start = 0
        served = [s for s in seen if s.served]
        for i, s in enumerate(seen):
            while seen[start].at <= s.at - self.window:
                start += 1
            most_requests = max(most_requests, i - start + 1)
        for s in served:
            tokens += s.tokens
            while served[served_start].at <= s.at - self.window:
                tokens -= served[served_start].tokens
                served_start += 1
            most_tokens = max(most_tokens, tokens)
        return most_requests, most_tokens

    # -- the wire -----------------------------------------------------------------

    async def handle(self, request: Request) -> Response:
        body = await request.json()
        cost = len(json.dumps(body["messages"]).encode()) // 4 + COMPLETION
        now = time.monotonic()
        with self._lock:
            while self._served and self._served[0][0] <= now - self.window:
                self._served.popleft()
            used = sum(t for _, t in self._served)
            over_requests = len(self._served) >= self.requests
            over_tokens = used + cost > self.tokens
            text = str(body["messages"][-1].get("content") or "")
            self.seen.append(Seen(now, cost, not (over_requests or over_tokens), text))
            if over_requests or over_tokens:
                wait = self._wait(now, cost, over_requests)
                headers = self._headers(now, len(self._served), used)
                headers["retry-after"] = f"{max(1, round(wait))}"
                return _refusal(body["model"], over_requests, self, headers)
            self._served.append((now, cost))
            headers = self._headers(now, len(self._served), used + cost)
        return Response(
            _stream(body["model"], cost - COMPLETION),
            media_type="text/event-stream",
            headers=headers,
        )

    def _wait(self, now: float, cost: int, over_requests: bool) -> float:
        """Seconds until this call would be served (the window's oldest leaving)."""
        if over_requests:
            return self._served[0][0] + self.window - now
        used, until = sum(t for _, t in self._served), now
        for at, tokens in self._served:
            if used + cost <= self.tokens:
                break
            used, until = used - tokens, at + self.window
        return until - now

    def _headers(self, now: float, requests: int, tokens: int) -> dict[str, str]:
        oldest = self._served[0][0] if self._served else now
        reset = f"{max(0.0, oldest + self.window - now):.3f}s"
        return {
            "x-ratelimit-limit-requests": str(self.requests),
            "x-ratelimit-limit-tokens": str(self.tokens),
            "x-ratelimit-remaining-requests": str(max(0, self.requests - requests)),
            "x-ratelimit-remaining-tokens": str(max(0, self.tokens - tokens)),
            "x-ratelimit-reset-requests": reset,
            "x-ratelimit-reset-tokens": reset,
        }


def _refusal(model: str, requests: bool, api: RateLimitedAPI, headers: dict[str, str]) -> Response:
    kind = "requests" if requests else "tokens"
    limit = api.requests if requests else api.tokens
    message = (
        f"Rate limit reached for {model} in organization org-test on {kind} per min: "
        f"Limit {limit}. Please try again in {headers['retry-after']}s."
    )
    error = {"message": message, "type": kind, "param": None, "code": "rate_limit_exceeded"}
    return JSONResponse({"error": error}, status_code=429, headers=headers)


def _stream(model: str, prompt_tokens: int) -> bytes:
    base: dict[str, Any] = {
        "id": "chatcmpl-rl",
        "object": "chat.completion.chunk",
        "created": 1736000000,
        "model": model,
    }
    chunks = [
        {**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": "paced"}}]},
        {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
        {
            **base,
            "choices": [],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": COMPLETION,
                "total_tokens": prompt_tokens + COMPLETION,
            },
        },
    ]
    events = b"".join(f"data: {json.dumps(c)}\n\n".encode() for c in chunks)
    return events + b"data: [DONE]\n\n"


@contextmanager
def serve(requests: int, tokens: int, window: float) -> Iterator[RateLimitedAPI]:
    """A ``RateLimitedAPI`` on a free local port for the block's length."""
    api = RateLimitedAPI(requests=requests, tokens=tokens, window=window)
    app = Starlette(routes=[Route("/v1/chat/completions", api.handle, methods=["POST"])])
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    config = uvicorn.Config(
        app, log_level="critical", http="h11", ws="none", loop="asyncio", lifespan="off"
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started:
        assert time.monotonic() < deadline, "local provider did not start"
        time.sleep(0.01)
    api.base = f"http://127.0.0.1:{sock.getsockname()[1]}/v1"
    try:
        yield api
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()
