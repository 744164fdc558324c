"""``client.inbox``: every open input request the caller may answer, across the
tenant's sessions (``GET /v1/inbox``). The call is built here without I/O; ``InboxApi``
and ``AsyncInboxApi`` send it."""

from __future__ import annotations

from turnkeep.client import calls
from turnkeep.client.calls import ApiCall, AsyncSend, Send
from turnkeep.inbox import InboxPage


def listing(limit: int, after: str | None) -> ApiCall[InboxPage]:
    params = {"state": "open", **calls.page(limit, after or None)}
    return ApiCall("GET", "/v1/inbox", calls.reader(InboxPage), params=params)


class InboxApi:
    """``client.inbox`` of the sync client."""

    def __init__(self, send: Send) -> None:
        self._send = send

    def list(self, *, limit: int = 50, after: str | None = None) -> InboxPage:
        """Every open request you may answer across the tenant's sessions, a page
        (oldest first; ``after``: the last ``next``)."""
        return self._send(listing(limit, after))


class AsyncInboxApi:
    """``client.inbox`` of the async client: ``InboxApi``'s method, awaited."""

    def __init__(self, send: AsyncSend) -> None:
        self._send = send

    async def list(self, *, limit: int = 50, after: str | None = None) -> InboxPage:
        return await self._send(listing(limit, after))
