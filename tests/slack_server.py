"""A local stand-in for Slack, speaking its real wire, both ways.

Slack's Web API, as turnkeep calls it (``FakeSlack``, a local HTTP server at
``slack.api_url``): ``chat.postMessage`` (a bot token in ``Authorization: Bearer``,
a JSON body; answers ``{"ok": true, "ts": …}`` and keeps the message in its thread),
``conversations.replies`` (a thread's messages, their ``metadata`` only with
``include_all_metadata``), ``chat.update`` and ``chat.postEphemeral``. A script makes the next posts
answer otherwise (``"500"``: HTTP 500; ``"ratelimited"``: HTTP 200 with
``{"ok": false, "error": "ratelimited"}``); ``channel_script`` does so for the next
posts into one channel only. Like real Slack, it does not deduplicate:
every post that is answered ok is a message, so a test counting messages by their
delivery key sees a double post if there is one.

And Slack's Events API and interactivity, as Slack calls turnkeep (``EventSender``):
requests signed ``v0`` with the signing secret, retries with ``X-Slack-Retry-Num``.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx

from turnkeep.runtime.bridges import slack


@dataclass(frozen=True)
class Call:
    """One Web API call received: the method, its token, and its arguments."""

    method: str
    token: str
    args: dict[str, Any]
    answered: str


@dataclass
class FakeSlack:
    """``with FakeSlack(token, ["500"]) as s: ... s.api_url ... s.posts()``"""

    token: str
    script: list[str] = field(default_factory=list)
    #: channel -> how its next posts are answered (before ``script``)
    channel_script: dict[str, list[str]] = field(default_factory=dict)
    calls: list[Call] = field(default_factory=list)
    #: (channel, thread ts) -> the thread's messages, oldest first
    threads: dict[tuple[str, str], list[dict[str, Any]]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._ts = 1_700_000_000
        self._changed = threading.Condition(self._lock)
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _answer(self, status: int, body: dict[str, Any]) -> None:
                raw = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json; charset=utf-8")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def _token(self) -> str:
                scheme, _, token = self.headers.get("Authorization", "").partition(" ")
                return token if scheme == "Bearer" else ""

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                args = json.loads(raw or b"{}")
                status, body = fake._call(urlsplit(self.path).path, self._token(), args)
                self._answer(status, body)

            def do_GET(self) -> None:
                parts = urlsplit(self.path)
                args = {k: v[0] for k, v in parse_qs(parts.query).items()}
                status, body = fake._call(parts.path, self._token(), args)
                self._answer(status, body)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def api_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/api"

    def _call(self, path: str, token: str, args: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        method = path.removeprefix("/api/")
        with self._changed:
            if token != self.token:
                answer: tuple[int, dict[str, Any]] = (200, {"ok": False, "error": "invalid_auth"})
            elif method == "chat.postMessage":
                answer = self._post(args)
            elif method == "chat.postEphemeral":
                answer = (200, {"ok": True, "message_ts": self._next_ts()})
            elif method == "chat.update":
                answer = self._update(args)
            elif method == "conversations.replies":
                answer = self._replies(args)
            else:
                answer = (200, {"ok": False, "error": "unknown_method"})
            status, body = answer
            said = str(status) if status != 200 else "ok" if body["ok"] else str(body["error"])
            self.calls.append(Call(method, token, args, said))
            self._changed.notify_all()
        return answer

    def _next_ts(self) -> str:
        self._ts += 1
        return f"{self._ts}.000100"

    def _post(self, args: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        mine = self.channel_script.get(str(args.get("channel")))
        action = mine.pop(0) if mine else self.script.pop(0) if self.script else "ok"
        if action.isdigit():
            return int(action), {"ok": False, "error": "internal_error"}
        if action != "ok":
            return 200, {"ok": False, "error": action}
        ts = self._next_ts()
        message = {"ts": ts, "text": args.get("text", ""), "bot_id": "B0"}
        for key in ("metadata", "blocks"):
            if key in args:
                message[key] = args[key]
        thread = str(args.get("thread_ts") or ts)
        self.threads.setdefault((str(args["channel"]), thread), []).append(message)
        return 200, {"ok": True, "channel": args["channel"], "ts": ts, "message": message}

    def _update(self, args: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        for thread in self.threads.values():
            for message in thread:
                if message["ts"] == args.get("ts"):
                    message["text"] = args.get("text", "")
                    message["blocks"] = args.get("blocks", [])
                    return 200, {"ok": True, "ts": message["ts"]}
        return 200, {"ok": False, "error": "message_not_found"}

    def _replies(self, args: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        found = self.threads.get((str(args.get("channel")), str(args.get("ts"))), [])
        full = args.get("include_all_metadata") == "true"
        messages = [m if full else {k: v for k, v in m.items() if k != "metadata"} for m in found]
        return 200, {"ok": True, "messages": messages, "has_more": False}

    # -- what tests read --

    def of(self, method: str) -> list[Call]:
        with self._lock:
            return [c for c in self.calls if c.method == method]

    def posts(self) -> list[Call]:
        """The ``chat.postMessage`` calls, answered or not."""
        return self.of("chat.postMessage")

    def messages(self, channel: str, thread: str) -> list[dict[str, Any]]:
        with self._lock:
            return list(self.threads.get((channel, thread), []))

    def keyed(self, key: str) -> list[dict[str, Any]]:
        """Every message in every thread carrying delivery ``key`` in its metadata."""
        with self._lock:
            return [
                m
                for thread in self.threads.values()
                for m in thread
                if ((m.get("metadata") or {}).get("event_payload") or {}).get("delivery_id") == key
            ]

    def wait(self, predicate: Any, timeout: float = 30.0, what: str = "slack") -> Any:
        """Wait until ``predicate(self)`` is truthy, woken by each call received."""
        deadline = time.monotonic() + timeout
        while True:
            got = predicate(self)
            if got:
                return got
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"timed out waiting for {what}: {self.calls}")
            with self._changed:
                self._changed.wait(min(left, 0.2))

    def __enter__(self) -> FakeSlack:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


@dataclass
class EventSender:
    """Slack calling turnkeep: signed Events API and interactivity requests."""

    url: str
    secret: str
    team: str = "T1"
    _events: int = 0

    def _headers(
        self, body: bytes, *, at: int | None = None, retry: int | None = None
    ) -> dict[str, str]:
        ts = str(int(time.time()) if at is None else at)
        headers = {
            slack.TIMESTAMP_HEADER: ts,
            slack.SIGNATURE_HEADER: slack.signature(self.secret, ts, body),
        }
        if retry:
            headers[slack.RETRY_HEADER] = str(retry)
            headers["X-Slack-Retry-Reason"] = "http_timeout"
        return headers

    def envelope(self, event: dict[str, Any], event_id: str | None = None) -> bytes:
        self._events += 1
        return json.dumps(
            {
                "token": "deprecated-verification-token",
                "team_id": self.team,
                "api_app_id": "A1",
                "event": {"event_ts": event.get("ts"), **event},
                "type": "event_callback",
                "event_id": event_id or f"Ev{self._events:06d}",
                "event_time": int(time.time()),
            }
        ).encode()

    def send(
        self, body: bytes, *, retries: Iterable[int | None] = (None,), **kw: Any
    ) -> list[httpx.Response]:
        """POST ``body`` to the events route, once per entry of ``retries`` (None: the
        first delivery; n: Slack's n-th retry, ``X-Slack-Retry-Num: n``)."""
        out = []
        for retry in retries:
            headers = {"Content-Type": "application/json", **self._headers(body, retry=retry, **kw)}
            out.append(
                httpx.post(
                    f"{self.url}/bridges/slack/events", content=body, headers=headers, timeout=10
                )
            )
        return out

    def mention(
        self, user: str, channel: str, ts: str, text: str, *, thread: str | None = None
    ) -> bytes:
        event = {
            "type": "app_mention",
            "user": user,
            "channel": channel,
            "ts": ts,
            "text": f"<@B0> {text}",
        }
        if thread is not None:
            event["thread_ts"] = thread
        return self.envelope(event)

    def reply(self, user: str, channel: str, ts: str, text: str, *, thread: str) -> bytes:
        return self.envelope(
            {
                "type": "message",
                "user": user,
                "channel": channel,
                "ts": ts,
                "text": text,
                "thread_ts": thread,
            }
        )

    def press(
        self,
        user: str,
        channel: str,
        value: str,
        *,
        approve: bool = True,
        message_ts: str | None = None,
        thread_ts: str | None = None,
    ) -> httpx.Response:
        """A button press of ``user`` on the prompt ``message_ts`` (in ``thread_ts``), as
        Slack sends it."""
        container = {"type": "message", "channel_id": channel}
        if message_ts is not None:
            container["message_ts"] = message_ts
        if thread_ts is not None:
            container["thread_ts"] = thread_ts
        payload = {
            "type": "block_actions",
            "user": {"id": user},
            "team": {"id": self.team},
            "channel": {"id": channel},
            "container": container,
            "actions": [
                {
                    "action_id": slack.APPROVE if approve else slack.DENY,
                    "value": value,
                    "type": "button",
                }
            ],
        }
        body = urlencode({"payload": json.dumps(payload)}).encode()
        headers = {"Content-Type": "application/x-www-form-urlencoded", **self._headers(body)}
        return httpx.post(
            f"{self.url}/bridges/slack/interactions", content=body, headers=headers, timeout=10
        )
