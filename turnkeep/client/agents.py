"""``client.agents``: the agents the API declares and their versions (``/v1/agents…``,
docs/deploy.md): list them, a name's versions, move a version's turns to the newest.
The calls are built here without I/O; ``AgentsApi`` and ``AsyncAgentsApi`` send them."""

from __future__ import annotations

from turnkeep.client import calls
from turnkeep.client.calls import ApiCall, AsyncSend, Send
from turnkeep.models import AgentList, AgentVersions, VersionUpgrade


def path(name: str, tail: str = "") -> str:
    return f"/v1/agents/{calls.segment(name)}{tail}"


def listing() -> ApiCall[AgentList]:
    return ApiCall("GET", "/v1/agents", calls.reader(AgentList))


def versions(name: str) -> ApiCall[AgentVersions]:
    return ApiCall("GET", path(name, "/versions"), calls.reader(AgentVersions))


def upgrade(name: str, definition_hash: str) -> ApiCall[VersionUpgrade]:
    tail = f"/versions/{calls.segment(definition_hash)}/upgrade"
    return ApiCall("POST", path(name, tail), calls.reader(VersionUpgrade))


class AgentsApi:
    """``client.agents`` of the sync client."""

    def __init__(self, send: Send) -> None:
        self._send = send

    def list(self) -> AgentList:
        """The agents the API declares, by name, each with its versions (oldest first)."""
        return self._send(listing())

    def versions(self, name: str) -> AgentVersions:
        """Every definition of the agent that is declared, still has active turns of
        the tenant, or is served by a live worker: its turns by state and its workers."""
        return self._send(versions(name))

    def upgrade(self, name: str, definition_hash: str) -> VersionUpgrade:
        """Flag every active turn of the tenant on that definition to move to the
        newest version (admin role); ``requested``: how many."""
        return self._send(upgrade(name, definition_hash))


class AsyncAgentsApi:
    """``client.agents`` of the async client: ``AgentsApi``'s methods, awaited."""

    def __init__(self, send: AsyncSend) -> None:
        self._send = send

    async def list(self) -> AgentList:
        return await self._send(listing())

    async def versions(self, name: str) -> AgentVersions:
        return await self._send(versions(name))

    async def upgrade(self, name: str, definition_hash: str) -> VersionUpgrade:
        return await self._send(upgrade(name, definition_hash))
