"""What one API process holds: built once by the app's lifespan, shared by requests."""

from __future__ import annotations

from dataclasses import dataclass

import redis
import redis.asyncio as aredis
from fastapi import Request

from api.auth import TokenTable
from api.enqueue import Enqueuer
from api.metrics import Metrics
from runtime.definitions import AgentRegistry
from runtime.settings import Settings
from store.channel import Publisher
from store.transitions import Store


@dataclass
class Services:
    settings: Settings
    store: Store
    #: sync client: publishing committed events and readiness
    redis: redis.Redis
    #: asyncio client: subscriptions of SSE streams and long polls
    aredis: aredis.Redis
    registry: AgentRegistry
    enqueuer: Enqueuer
    publisher: Publisher
    tokens: TokenTable
    metrics: Metrics

    @classmethod
    def build(cls, settings: Settings, metrics: Metrics) -> Services:
        from runtime.definitions import load_agents

        tokens = TokenTable.parse(settings.tokens)
        registry = load_agents(settings.agents)
        store = Store.from_url(settings.database_url, pool_size=settings.db_pool_size)
        sync = redis.Redis.from_url(settings.redis_url, socket_connect_timeout=2, socket_timeout=5)
        live = aredis.Redis.from_url(settings.redis_url, socket_connect_timeout=2)
        return cls(
            settings=settings,
            store=store,
            redis=sync,
            aredis=live,
            registry=registry,
            enqueuer=Enqueuer(settings.effective_broker_url, settings.queue),
            publisher=Publisher(sync),
            tokens=tokens,
            metrics=metrics,
        )

    async def close(self) -> None:
        self.enqueuer.close()
        await self.aredis.aclose()
        self.redis.close()
        self.store.close()


def get_services(request: Request) -> Services:
    """FastAPI dependency: the process's services."""
    services: Services = request.app.state.services
    return services
