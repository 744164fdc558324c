"""``client.bindings``: the chat bridges' bindings of a tenant (``/v1/bridges/bindings``,
docs/bridges.md): create, list, revoke. The calls are built here without I/O;
``BindingsApi`` and ``AsyncBindingsApi`` send them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from turnkeep.client import calls
from turnkeep.client.calls import ApiCall, AsyncSend, Send
from turnkeep.models import Binding, BindingList

PATH = "/v1/bridges/bindings"


def create(body: Mapping[str, Any]) -> ApiCall[Binding]:
    return ApiCall("POST", PATH, calls.reader(Binding), json=dict(body))


def listing() -> ApiCall[BindingList]:
    return ApiCall("GET", PATH, calls.reader(BindingList))


def revoke(binding_id: str) -> ApiCall[Binding]:
    return ApiCall("DELETE", f"{PATH}/{calls.segment(binding_id)}", calls.reader(Binding))


class BindingsApi:
    """``client.bindings`` of the sync client."""

    def __init__(self, send: Send) -> None:
        self._send = send

    def create(self, **body: Any) -> Binding:
        """Bind a chat bridge's sender (``bridge``, ``workspace``, ``channel``, ``user``)
        to a subject of the tenant answered by ``agent`` (an admin's token)."""
        return self._send(create(body))

    def list(self) -> BindingList:
        """The tenant's bindings, live ones first."""
        return self._send(listing())

    def revoke(self, binding_id: str) -> Binding:
        """Revoke a live binding: its sender's next message admits nothing."""
        return self._send(revoke(binding_id))


class AsyncBindingsApi:
    """``client.bindings`` of the async client: ``BindingsApi``'s methods, awaited."""

    def __init__(self, send: AsyncSend) -> None:
        self._send = send

    async def create(self, **body: Any) -> Binding:
        return await self._send(create(body))

    async def list(self) -> BindingList:
        return await self._send(listing())

    async def revoke(self, binding_id: str) -> Binding:
        return await self._send(revoke(binding_id))
