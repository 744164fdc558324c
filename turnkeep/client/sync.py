"""The sync client: ``Client`` holds the connection and one attribute per resource of
the API (``tk.turns``, ``tk.sessions``, ``tk.schedules``, …), each a small class of its
resource's module that builds its requests there and sends them through ``send``."""

from __future__ import annotations

from types import TracebackType
from typing import Self, TypeVar

import httpx

from turnkeep.client.agents import AgentsApi
from turnkeep.client.attachments import AttachmentsApi
from turnkeep.client.bindings import BindingsApi
from turnkeep.client.calls import ApiCall, Config
from turnkeep.client.errors import Unreachable
from turnkeep.client.evaluation import EvalApi
from turnkeep.client.feedback import FeedbackApi
from turnkeep.client.inbox import InboxApi
from turnkeep.client.max_running import MaxRunningApi
from turnkeep.client.projects import ProjectsApi
from turnkeep.client.schedules import SchedulesApi
from turnkeep.client.search import SearchApi
from turnkeep.client.sessions import SessionsApi
from turnkeep.client.turns import TurnsApi

T = TypeVar("T")


class Client:
    """The sync client. ``transport``: an httpx transport (tests pass a MockTransport)."""

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
        transport: httpx.BaseTransport | None = None,
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
        self._http = httpx.Client(
            base_url=self.config.url,
            headers=self.config.headers,
            timeout=timeout,
            transport=transport,
        )
        self.turns = TurnsApi(self.send, self.config)
        self.sessions = SessionsApi(self.send, self.config, self._http)
        self.attachments = AttachmentsApi(self.send)
        self.agents = AgentsApi(self.send)
        self.schedules = SchedulesApi(self.send)
        self.projects = ProjectsApi(self.send)
        self.bindings = BindingsApi(self.send)
        self.feedback = FeedbackApi(self.send)
        self.inbox = InboxApi(self.send)
        self.search = SearchApi(self.send)
        self.max_running = MaxRunningApi(self.send)
        self.eval = EvalApi(self.send)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def send(self, call: ApiCall[T]) -> T:
        """Send one request and read its answer (``Unreachable`` when none came)."""
        try:
            response = self._http.request(call.method, call.path, **call.options())
        except httpx.TransportError as exc:
            raise Unreachable(f"{call.method} {call.path}: {type(exc).__name__}: {exc}") from exc
        return call.read(response)
