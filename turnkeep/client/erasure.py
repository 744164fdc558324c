"""Deleting a session (docs/erasure.md), as both clients call it: the request, without
I/O, and the methods ``Client`` and ``AsyncClient`` inherit (``SessionErasure``,
``AsyncSessionErasure``). Kept beside calls.py, sync.py and aio.py, not in them."""

from __future__ import annotations

import time
from typing import TypeVar

import anyio

from turnkeep.client.calls import ApiCall
from turnkeep.client.errors import parsed
from turnkeep.erasure import Tombstone

T = TypeVar("T")

#: seconds between two DELETEs of ``wait_erased`` (each answers the tombstone as it is)
ERASED_POLL = 0.5


def delete_session(session_id: str) -> ApiCall[Tombstone]:
    """``DELETE /v1/sessions/{sid}``: 202 and the tombstone (its erasure under way), or
    200 once it is erased; a DELETE again answers the same tombstone."""
    return ApiCall(
        "DELETE",
        f"/v1/sessions/{session_id}",
        lambda response: parsed(response, Tombstone),
    )


class SessionErasure:
    """``Client``'s session deletion (``_call`` is the client's)."""

    def _call(self, call: ApiCall[T]) -> T:
        raise NotImplementedError

    def delete_session(self, session_id: str) -> Tombstone:
        """Delete the session: everything it held is erased, its tombstone stays; from
        now on every read of it raises ``ApiError`` 410 ``session_deleted``.
        Idempotent: the tombstone, with ``erased_at`` once the erasure finished."""
        return self._call(delete_session(session_id))

    def wait_erased(self, session_id: str, timeout: float) -> Tombstone:
        """The tombstone once its erasure finished (``erased_at``), or as it is after
        ``timeout`` seconds."""
        until = time.monotonic() + timeout
        while True:
            gone = self.delete_session(session_id)
            if gone.erased_at is not None or time.monotonic() >= until:
                return gone
            time.sleep(min(ERASED_POLL, max(0.0, until - time.monotonic())))


class AsyncSessionErasure:
    """``AsyncClient``'s session deletion (``_call`` is the client's)."""

    async def _call(self, call: ApiCall[T]) -> T:
        raise NotImplementedError

    async def delete_session(self, session_id: str) -> Tombstone:
        """As ``Client.delete_session``, awaited."""
        return await self._call(delete_session(session_id))

    async def wait_erased(self, session_id: str, timeout: float) -> Tombstone:
        """As ``Client.wait_erased``, awaited."""
        until = time.monotonic() + timeout
        while True:
            gone = await self.delete_session(session_id)
            if gone.erased_at is not None or time.monotonic() >= until:
                return gone
            await anyio.sleep(min(ERASED_POLL, max(0.0, until - time.monotonic())))
