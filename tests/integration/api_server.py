"""Helpers for the API's integration tests: the app under a real uvicorn server.

``serve_api`` (for a module-scoped fixture) runs ``create_app(settings)`` on 127.0.0.1 on a free
port in a background thread, with two tenants' tokens, the test run's database and
Redis, and its own Redis database as the Celery broker (so no worker another test
started can take these turns). ``Stepper`` moves a turn the way a worker does, with
the real store (``claim`` + fenced ``append``) and the real channel ``Publisher``.
"""

from __future__ import annotations

import base64
import json
import socket
import threading
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx
import httpx2
import redis
import uvicorn
from fastapi import FastAPI
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from turnkeep.api.app import create_app
from turnkeep.api.auth import token_digest
from turnkeep.runtime.settings import Settings, variables
from turnkeep.runtime.states import EventType, TurnState
from turnkeep.store.channel import Publisher
from turnkeep.store.facade import Store
from turnkeep.store.keys import broker_keyprefix
from turnkeep.store.records import Appended
from turnkeep.store.step_commit import StepCommit

AGENTS_MODULE = "tests.integration.api_agents"


class ServerThread:
    """uvicorn serving ``app`` on a socket bound to a free port, in a daemon thread."""

    def __init__(self, app: FastAPI) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        config = uvicorn.Config(
            app, log_level="warning", ws="none", lifespan="on", timeout_graceful_shutdown=2
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(
            target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True
        )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            if not self.thread.is_alive():
                raise RuntimeError("the API server did not start")
            if time.monotonic() > deadline:
                raise TimeoutError("the API server did not start in 20 s")
            time.sleep(0.02)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(15)
        self.sock.close()


@dataclass
class Api:
    """A running API and the two tenants it knows."""

    url: str
    settings: Settings
    tenant_a: str
    tenant_b: str
    token_a: str
    token_b: str
    #: more principals of tenant a: "a-member" (carol), "a-reader" (dave), "a-admin" (erin)
    more: dict[str, str] = field(default_factory=dict)
    clients: list[httpx.Client] = field(default_factory=list)

    def client(self, token: str | None = "a", **kwargs: Any) -> httpx.Client:
        """An httpx client with tenant ``a``'s or ``b``'s token, one of ``more``, or a
        literal one."""
        headers: dict[str, str] = {}
        real = {"a": self.token_a, "b": self.token_b, **self.more}.get(token or "", token)
        if real:
            headers["Authorization"] = f"Bearer {real}"
        c = httpx.Client(base_url=self.url, headers=headers, timeout=20, **kwargs)
        self.clients.append(c)
        return c

    def close(self) -> None:
        for c in self.clients:
            c.close()


def api_settings(*, database_url: str, redis_url: str, **overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "database_url": database_url,
        "redis_url": redis_url,
        "broker_url": broker_url(redis_url),
        "agents": AGENTS_MODULE,
        "tokens": "",
        "sse_heartbeat": 0.5,
        "max_wait": 10.0,
        "max_body_bytes": 64 * 1024,
        "db_pool_size": 10,
    }
    values.update(overrides)
    return Settings(**sections(values))


def sections(values: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Settings named as their variables (``max_wait``: TURNKEEP_MAX_WAIT), grouped into
    the settings' sections."""
    where = variables()
    grouped: dict[str, dict[str, Any]] = {}
    for name, value in values.items():
        section, field = where[f"TURNKEEP_{name.upper()}"]
        grouped.setdefault(section, {})[field] = value
    return grouped


def broker_url(redis_url: str) -> str:
    """The test run's Redis, another database number: the API tests' own broker."""
    base, _, db = redis_url.rpartition("/")
    return f"{base}/{(int(db) + 3) % 16}"


@contextmanager
def serve_api(service_env: dict[str, str], **overrides: Any) -> Iterator[Api]:
    """A running API for a test module: use it from a module-scoped fixture."""
    run = uuid.uuid4().hex[:8]
    tenant_a, tenant_b = f"tA-{run}", f"tB-{run}"
    token_a, token_b = f"secret-a-{uuid.uuid4().hex}", f"secret-b-{uuid.uuid4().hex}"
    more = {
        name: f"secret-{name}-{uuid.uuid4().hex}" for name in ("a-member", "a-reader", "a-admin")
    }
    tokens = json.dumps(
        [
            {"sha256": token_digest(token_a), "tenant": tenant_a, "subject": "alice"},
            {"sha256": token_digest(token_b), "tenant": tenant_b, "subject": "bob"},
            {"sha256": token_digest(more["a-member"]), "tenant": tenant_a, "subject": "carol"},
            {
                "sha256": token_digest(more["a-reader"]),
                "tenant": tenant_a,
                "subject": "dave",
                "role": "reader",
            },
            {
                "sha256": token_digest(more["a-admin"]),
                "tenant": tenant_a,
                "subject": "erin",
                "role": "admin",
            },
        ]
    )
    values = {
        "database_url": service_env["TURNKEEP_DATABASE_URL"],
        "redis_url": service_env["TURNKEEP_REDIS_URL"],
        "tokens": tokens,
        # the Slack workspaces T1 and T2 are tenant a's and b's (docs/bridges.md)
        "slack_workspaces": {"T1": tenant_a, "T2": tenant_b},
        # and the generic bridge's secret (when a test gives one) signs for tenant a
        "bridge_tenant": tenant_a,
        # the API's own broker (no worker reads it: api_settings) gets a queue of its
        # own too, so its fair ready sets (store/fair.py) never meet the workers'
        "queue": service_env["TURNKEEP_QUEUE"] + ("" if "broker_url" in overrides else ".api"),
        **overrides,
    }
    settings = api_settings(**values)
    server = ServerThread(create_app(settings))
    server.start()
    handle = Api(server.url, settings, tenant_a, tenant_b, token_a, token_b, more)
    try:
        yield handle
    finally:
        handle.close()
        server.stop()
        drop_broker_messages(settings, {tenant_a, tenant_b})


def queue_list(settings: Settings) -> str:
    """The Redis list kombu keeps the queue's messages in (under the settings' prefix)."""
    return broker_keyprefix(settings.redis.prefix) + settings.broker.queue


def queue_lists(settings: Settings) -> list[str]:
    """That list and one per priority step (a turn's priority: store/producer.py)."""
    from kombu.transport.redis import PRIORITY_STEPS, Channel

    base = queue_list(settings)
    return [f"{base}{Channel.sep}{p}" if p else base for p in PRIORITY_STEPS]


def broker_messages(settings: Settings) -> list[dict[str, Any]]:
    """The run_session messages waiting on the broker's turnkeep list, decoded."""
    client = redis.Redis.from_url(settings.effective_broker_url)
    try:
        raw = [(key, item) for key in queue_lists(settings) for item in client.lrange(key, 0, -1)]
    finally:
        client.close()
    out = []
    for key, item in raw:
        envelope = json.loads(item)
        body = json.loads(base64.b64decode(envelope["body"]))
        out.append({"raw": item, "envelope": envelope, "body": body, "list": key})
    return out


def drop_broker_messages(settings: Settings, tenants: set[str]) -> None:
    if not settings.effective_broker_url.startswith("redis"):
        return  # RabbitMQ: the module's queues are deleted with it (tests/amqp.py)
    client = redis.Redis.from_url(settings.effective_broker_url)
    try:
        for m in broker_messages(settings):
            if m["body"][0] and m["body"][0][0] in tenants:
                client.lrem(m["list"], 0, m["raw"])
    except redis.ConnectionError:
        pass  # a test pointed the broker at a dead address: nothing to drop
    finally:
        client.close()


def admit(
    client: httpx.Client,
    sid: str,
    key: str | None = None,
    *,
    text: str = "Weather in Paris?",
    agent: str = "demo",
    **extra: Any,
) -> httpx.Response:
    headers = {} if key is None else {"Idempotency-Key": key}
    body = {"agent": agent, "input": [{"role": "user", "content": text}], **extra}
    return client.post(f"/v1/sessions/{sid}/turns", json=body, headers=headers)


class Stepper:
    """Moves one turn as a worker would: a claimed fence, then fenced appends."""

    def __init__(
        self, store: Store, publisher: Publisher | None, tenant: str, sid: str, turn_id: str
    ) -> None:
        self.store = store
        self.publisher = publisher
        self.tenant = tenant
        self.sid = sid
        self.turn_id = turn_id
        self.fence = 0
        self.revision = 0
        self.step_no = 0

    def start(self, *, publish: bool = True) -> Appended:
        self.fence = self.store.reads.fence_floor(self.tenant, self.sid) + 1
        assert self.store.turns.claim(self.tenant, self.sid, self.fence)
        self.revision = self.store.reads.get_turn(self.tenant, self.sid, self.turn_id).revision
        return self._append(
            TurnState.RUNNING,
            EventType.TURN_STARTED,
            {"attempt": 1},
            publish=publish,
            attempt_inc=1,
        )

    def model(
        self, content: str, tool_calls: list[dict[str, Any]] | None = None, *, publish: bool = True
    ) -> Appended:
        self.step_no += 1
        message: dict[str, Any] = {"role": "assistant", "content": content}
        if tool_calls:
            message["tool_calls"] = tool_calls
        return self._append(
            TurnState.RUNNING,
            EventType.MODEL_COMPLETED,
            {"message": message},
            step=self.step_no,
            publish=publish,
        )

    def tool(self, call_id: str, content: str, *, publish: bool = True) -> Appended:
        self.step_no += 1
        message = {"role": "tool", "content": content, "tool_call_id": call_id, "name": "weather"}
        return self._append(
            TurnState.RUNNING,
            EventType.TOOL_COMPLETED,
            {"message": message},
            step=self.step_no,
            publish=publish,
        )

    def complete(self, result: dict[str, Any], *, publish: bool = True) -> Appended:
        return self._append(
            TurnState.COMPLETED,
            EventType.TURN_COMPLETED,
            {"result": result},
            publish=publish,
            result=result,
        )

    def _append(
        self,
        state: TurnState,
        type: EventType,
        data: dict[str, Any],
        *,
        publish: bool,
        step: int | None = None,
        attempt_inc: int = 0,
        result: dict[str, Any] | None = None,
    ) -> Appended:
        appended = self.store.turns.append(
            self.tenant,
            self.sid,
            self.fence,
            StepCommit(
                turn_id=self.turn_id,
                revision=self.revision,
                state=state,
                type=type,
                data=data,
                step=step,
                attempt_inc=attempt_inc,
                result=result,
            ),
        )
        self.revision = appended.revision
        if publish and self.publisher is not None:
            self.publisher.committed(appended.event)
        return appended


@dataclass
class SseFrame:
    id: int | None
    event: str
    data: dict[str, Any]


def parse_sse(lines: Iterator[str]) -> Iterator[SseFrame | None]:
    """SSE frames from lines; yields None for each comment (heartbeat)."""
    fields: dict[str, str] = {}
    for line in lines:
        if line == "":
            if "data" in fields:
                raw_id = fields.get("id")
                yield SseFrame(
                    int(raw_id) if raw_id is not None else None,
                    fields.get("event", "message"),
                    json.loads(fields["data"]),
                )
            fields = {}
        elif line.startswith(":"):
            yield None
        else:
            name, _, value = line.partition(":")
            fields[name] = value[1:] if value.startswith(" ") else value


@asynccontextmanager
async def session_at(url: str, token: str, *, modern: bool = False) -> AsyncIterator[ClientSession]:
    """An SDK client session with ``token`` against the API at ``url``, set up."""
    http = httpx2.AsyncClient(
        headers={"Authorization": f"Bearer {token}"}, timeout=httpx2.Timeout(30, read=60)
    )
    async with (
        http,
        streamable_http_client(f"{url}/mcp", http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        if modern:
            await session.discover()
        else:
            await session.initialize()
        yield session
