"""The async client: ``AsyncClient`` holds the connection and the same resources as
``Client`` (turnkeep/client/sync.py), each the ``Async`` class of its resource's module,
over the same requests and the same stream cursor (turnkeep/client/sse.py)."""

from __future__ import annotations

from types import TracebackType
from typing import Self, TypeVar

import httpx

from turnkeep.client.agents import AsyncAgentsApi
from turnkeep.client.attachments import AsyncAttachmentsApi
from turnkeep.client.bindings import AsyncBindingsApi
from turnkeep.client.calls import ApiCall, Config
from turnkeep.client.errors import Unreachable
from turnkeep.client.evaluation import AsyncEvalApi
from turnkeep.client.feedback import AsyncFeedbackApi
from turnkeep.client.inbox import AsyncInboxApi
from turnkeep.client.max_running import AsyncMaxRunningApi
from turnkeep.client.projects import AsyncProjectsApi
from turnkeep.client.schedules import AsyncSchedulesApi
from turnkeep.client.search import AsyncSearchApi
from turnkeep.client.sessions import AsyncSessionsApi
from turnkeep.client.turns import AsyncTurnsApi

T = TypeVar("T")


class AsyncClient:
    """The async client: the same resources as ``Client``, their methods awaited."""

    def __init__(
        self,
        url: str | None = None,
        token: str | None = None,
        *,
        timeout: float = 30.0,
        poll: float = 10.0,
        stream_timeout: float = 60.0,
        retries: int = 8,
        backoff: float = 0.2,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.config = Config(
            url,
            token,
            timeout=timeout,
            poll=poll,
            stream_timeout=stream_timeout,
            retries=retries,
            backoff=backoff,
        )
        self._http = httpx.AsyncClient(
            base_url=self.config.url,
            headers=self.config.headers,
            timeout=timeout,
            transport=transport,
        )
        self.turns = AsyncTurnsApi(self.send, self.config)
        self.sessions = AsyncSessionsApi(self.send, self.config, self._http)
        self.attachments = AsyncAttachmentsApi(self.send)
        self.agents = AsyncAgentsApi(self.send)
        self.schedules = AsyncSchedulesApi(self.send)
        self.projects = AsyncProjectsApi(self.send)
        self.bindings = AsyncBindingsApi(self.send)
        self.feedback = AsyncFeedbackApi(self.send)
        self.inbox = AsyncInboxApi(self.send)
        self.search = AsyncSearchApi(self.send)
        self.max_running = AsyncMaxRunningApi(self.send)
        self.eval = AsyncEvalApi(self.send)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    async def send(self, call: ApiCall[T]) -> T:
        """Send one request and read its answer (``Unreachable`` when none came)."""
        try:
            response = await self._http.request(call.method, call.path, **call.options())
        except httpx.TransportError as exc:
            raise Unreachable(f"{call.method} {call.path}: {type(exc).__name__}: {exc}") from exc
        return call.read(response)
