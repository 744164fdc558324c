"""``client.max_running``: how many turns of the tenant may run at once (``GET``/``PUT
/v1/limits``, docs/flow-control.md; the route keeps its old name). The calls are built
here without I/O; ``MaxRunningApi`` and ``AsyncMaxRunningApi`` send them."""

from __future__ import annotations

from turnkeep.client import calls
from turnkeep.client.calls import ApiCall, AsyncSend, Send
from turnkeep.max_running import TenantMaxRunning

PATH = "/v1/limits"


def get() -> ApiCall[TenantMaxRunning]:
    return ApiCall("GET", PATH, calls.reader(TenantMaxRunning))


def put(max_running: int | None) -> ApiCall[TenantMaxRunning]:
    body = {"max_running": max_running}
    return ApiCall("PUT", PATH, calls.reader(TenantMaxRunning), json=body)


class MaxRunningApi:
    """``client.max_running`` of the sync client."""

    def __init__(self, send: Send) -> None:
        self._send = send

    def get(self) -> TenantMaxRunning:
        """The tenant's max_running: its own and the one in force."""
        return self._send(get())

    def set(self, max_running: int | None) -> TenantMaxRunning:
        """Declare the tenant's max_running (None clears it); a tenant's admin only."""
        return self._send(put(max_running))


class AsyncMaxRunningApi:
    """``client.max_running`` of the async client: ``MaxRunningApi``'s methods, awaited."""

    def __init__(self, send: AsyncSend) -> None:
        self._send = send

    async def get(self) -> TenantMaxRunning:
        return await self._send(get())

    async def set(self, max_running: int | None) -> TenantMaxRunning:
        return await self._send(put(max_running))
