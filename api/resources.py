"""What one API process holds: built once by the app's lifespan, shared by requests.

Blocking calls (the store, the sync Redis client) run on ``blocking``, a thread pool
as large as the store's connection pool, so a request's statement never waits for a
thread and a thread never waits for a connection; ``await services.run(fn, ...)`` is
the one hop a request makes off the event loop. What follows an answer (publishing
the committed event, the enqueue) goes to ``after``, threads of their own: the request
hands it over and is done, nothing waits for it on the event loop. At shutdown what
was handed over gets ``AFTER_DRAIN`` seconds to finish; the rest is dropped (the
recovery scan enqueues those sessions, readers find those events in the journal).
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any, TypeVar

import redis
import redis.asyncio as aredis
from starlette.background import BackgroundTask
from starlette.requests import HTTPConnection

from turnkeep.api.auth import TokenTable
from turnkeep.api.metrics import Metrics
from turnkeep.api.service.bounds import StreamSlots
from turnkeep.runtime.agents.definition import AgentDefinition
from turnkeep.runtime.agents.registry import AgentRegistry, load_agents
from turnkeep.runtime.settings import Settings
from turnkeep.store.channel import Publisher
from turnkeep.store.facade import Store
from turnkeep.store.producer import Producer
from turnkeep.store.secrets import SecretBox

log = logging.getLogger(__name__)

T = TypeVar("T")

#: threads of the after-answer work: a publish and an enqueue, about a millisecond each
AFTER_THREADS = 2
#: seconds the after-answer work handed over before shutdown gets to finish
AFTER_DRAIN = 5.0


@dataclass
class ApiResources:
    settings: Settings
    store: Store
    #: sync client: publishing committed events and readiness
    redis: redis.Redis
    #: asyncio client: subscriptions of SSE streams and long polls
    aredis: aredis.Redis
    registry: AgentRegistry
    producer: Producer
    publisher: Publisher
    tokens: TokenTable
    metrics: Metrics
    #: the blocking calls of requests (see the module docstring)
    blocking: ThreadPoolExecutor
    #: the work that follows an answer
    after: ThreadPoolExecutor
    #: each agent's latest definition hash by name, computed once (a definition never
    #: changes)
    agent_hashes: dict[str, str]
    #: every declared version's hash, by (name, version)
    version_hashes: dict[tuple[str, str], str] = field(default_factory=dict)
    #: after-answer work handed over and not finished yet
    pending: set[Future[None]] = field(default_factory=set)
    #: the SSE streams each tenant holds open on this process (api/service/bounds.py)
    streams: StreamSlots = field(default_factory=StreamSlots)

    @classmethod
    def build(cls, settings: Settings, metrics: Metrics) -> ApiResources:
        tokens = TokenTable.parse(settings.auth.tokens)
        registry = load_agents(settings.worker.agents)
        store = Store.from_url(settings.database.url, pool_size=settings.database.pool_size)
        sync = redis.Redis.from_url(settings.redis.url, socket_connect_timeout=2, socket_timeout=5)
        live = aredis.Redis.from_url(settings.redis.url, socket_connect_timeout=2)
        return cls(
            settings=settings,
            store=store,
            redis=sync,
            aredis=live,
            registry=registry,
            producer=Producer.from_settings(settings),
            publisher=Publisher(sync),
            tokens=tokens,
            metrics=metrics,
            blocking=ThreadPoolExecutor(
                settings.database.pool_size, thread_name_prefix="api-blocking"
            ),
            after=ThreadPoolExecutor(AFTER_THREADS, thread_name_prefix="api-after"),
            agent_hashes={n: registry.get(n).definition_hash for n in registry.names()},
            version_hashes={
                (a.name, a.version): a.definition_hash
                for n in registry.names()
                for a in registry.versions(n)
            },
        )

    @property
    def secrets(self) -> SecretBox:
        """Where the answers of external_auth requests wait for their tool."""
        return SecretBox(self.redis)

    def agent_hash(self, agent: AgentDefinition) -> str:
        return self.version_hashes.get((agent.name, agent.version)) or agent.definition_hash

    async def run(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
        """``fn(*args, **kwargs)`` on a blocking thread, awaited."""
        loop = asyncio.get_running_loop()
        if kwargs:
            return await loop.run_in_executor(self.blocking, functools.partial(fn, *args, **kwargs))
        return await loop.run_in_executor(self.blocking, fn, *args)

    def after_answer(self, fn: Callable[..., object], /, *args: Any) -> BackgroundTask:
        """A response's background: ``fn(*args)`` is handed to the after-answer thread
        once the response has gone out; errors are logged (by type), never raised."""
        return BackgroundTask(self._hand_over, fn, *args)

    async def _hand_over(self, fn: Callable[..., object], *args: Any) -> None:
        future = self.after.submit(_logged, fn, *args)
        self.pending.add(future)
        future.add_done_callback(self.pending.discard)

    async def close(self) -> None:
        wait(list(self.pending), timeout=AFTER_DRAIN)
        self.after.shutdown(wait=True, cancel_futures=True)
        self.blocking.shutdown(wait=True)
        self.producer.close()
        await self.aredis.aclose()
        self.redis.close()
        self.store.close()


def _logged(fn: Callable[..., object], *args: Any) -> None:
    try:
        fn(*args)
    except Exception as exc:
        log.warning("after-answer work failed: %s", type(exc).__name__)


def services_of(conn: HTTPConnection) -> ApiResources:
    """The process's services (set on the app by its lifespan)."""
    services: ApiResources = conn.app.state.services
    return services
