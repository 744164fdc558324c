"""The client's calls and methods for a tenant's max_running (``GET``/``PUT
/v1/limits``, docs/flow-control.md): a mixin each of ``Client`` and ``AsyncClient``
inherits, over their ``_call``."""

from __future__ import annotations

from typing import Any, Protocol, TypeVar

from turnkeep.client.calls import ApiCall, _reader
from turnkeep.max_running import TenantMaxRunning

T = TypeVar("T")


def limits() -> ApiCall[TenantMaxRunning]:
    return ApiCall("GET", "/v1/limits", _reader(TenantMaxRunning))


def set_limits(max_running: int | None) -> ApiCall[TenantMaxRunning]:
    return ApiCall(
        "PUT", "/v1/limits", _reader(TenantMaxRunning), json={"max_running": max_running}
    )


class _Caller(Protocol):
    def _call(self, call: ApiCall[Any]) -> Any: ...


class LimitsMethods:
    def limits(self: _Caller) -> TenantMaxRunning:
        """The tenant's max_running: its own and the one in force."""
        return self._call(limits())  # type: ignore[no-any-return]

    def set_limits(self: _Caller, *, max_running: int | None) -> TenantMaxRunning:
        """Declare the tenant's max_running (None clears it); a tenant's admin only."""
        return self._call(set_limits(max_running))  # type: ignore[no-any-return]


class _AsyncCaller(Protocol):
    async def _call(self, call: ApiCall[Any]) -> Any: ...


class AsyncLimitsMethods:
    async def limits(self: _AsyncCaller) -> TenantMaxRunning:
        """The tenant's max_running: its own and the one in force."""
        return await self._call(limits())  # type: ignore[no-any-return]

    async def set_limits(self: _AsyncCaller, *, max_running: int | None) -> TenantMaxRunning:
        """Declare the tenant's max_running (None clears it); a tenant's admin only."""
        return await self._call(set_limits(max_running))  # type: ignore[no-any-return]
