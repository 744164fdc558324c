"""``client.search`` (docs/search.md): ``turns`` (``GET /v1/turns``) and ``sessions``
(``GET /v1/sessions`` with filters), one page each, and ``all_turns`` / ``all_sessions``
walking every page. The calls are built here without I/O; ``SearchApi`` and
``AsyncSearchApi`` send them.

Filters are keyword arguments, each optional and ANDed: ``state`` (one or several,
ORed), ``agent``, ``agent_version`` and ``error`` (turns only), ``project``,
``metadata`` (a mapping: every pair must match), and the time ranges
``created_since``/``created_until``/``updated_since``/``updated_until`` (aware
datetimes; since inclusive, until exclusive).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any, TypeVar

import httpx

from turnkeep.client import calls
from turnkeep.client.calls import ApiCall, AsyncSend, Send
from turnkeep.models import Session, SessionPage, Turn, TurnPage

P = TypeVar("P", TurnPage, SessionPage)

States = str | Sequence[str] | None
_TIMES = ("created_since", "created_until", "updated_since", "updated_until")


def query(
    *,
    limit: int,
    after: str | None,
    state: States = None,
    metadata: Mapping[str, str] | None = None,
    **filters: str | datetime | None,
) -> httpx.QueryParams:
    """The query of a search: repeated ``state`` and ``metadata=key=value``, times in
    RFC 3339, the unset filters left out."""
    items: list[tuple[str, str | int | float | bool | None]] = [("limit", limit)]
    if after is not None:
        items.append(("after", after))
    states = [state] if isinstance(state, str) else list(state or ())
    items += [("state", s) for s in states]
    items += [("metadata", f"{k}={v}") for k, v in (metadata or {}).items()]
    for name, value in filters.items():
        if value is None:
            continue
        if name in _TIMES:
            if not isinstance(value, datetime) or value.tzinfo is None:
                raise ValueError(f"{name}: an aware datetime is needed")
            value = value.isoformat()
        items.append((name, str(value)))
    return httpx.QueryParams(items)


def _given(arguments: dict[str, Any]) -> dict[str, Any]:
    """A search method's own arguments (its ``locals()`` on entry), for ``query``."""
    return {k: v for k, v in arguments.items() if k != "self"}


def turns(params: httpx.QueryParams) -> ApiCall[TurnPage]:
    return ApiCall("GET", "/v1/turns", calls.reader(TurnPage), params=params)


def sessions(params: httpx.QueryParams) -> ApiCall[SessionPage]:
    return ApiCall("GET", "/v1/sessions", calls.reader(SessionPage), params=params)


def _pages(search: Callable[..., P], size: int, filters: dict[str, Any]) -> Iterator[P]:
    """Each page of a search, following ``next`` until the last."""
    after = None
    while True:
        found = search(limit=size, after=after, **filters)
        yield found
        if found.next is None:
            return
        after = found.next


async def _async_pages(
    search: Callable[..., Awaitable[P]], size: int, filters: dict[str, Any]
) -> AsyncIterator[P]:
    """``_pages`` of an async search."""
    after = None
    while True:
        found = await search(limit=size, after=after, **filters)
        yield found
        if found.next is None:
            return
        after = found.next


class SearchApi:
    """``client.search`` of the sync client."""

    def __init__(self, send: Send) -> None:
        self._send = send

    def turns(
        self,
        *,
        state: States = None,
        agent: str | None = None,
        agent_version: str | None = None,
        error: str | None = None,
        project: str | None = None,
        metadata: Mapping[str, str] | None = None,
        created_since: datetime | None = None,
        created_until: datetime | None = None,
        updated_since: datetime | None = None,
        updated_until: datetime | None = None,
        limit: int = 50,
        after: str | None = None,
    ) -> TurnPage:
        """A page of the tenant's turns the filters match, newest first; ``next`` is
        the ``after`` of the next page (None: the last)."""
        return self._send(turns(query(**_given(locals()))))

    def sessions(
        self,
        *,
        state: States = None,
        agent: str | None = None,
        project: str | None = None,
        metadata: Mapping[str, str] | None = None,
        created_since: datetime | None = None,
        created_until: datetime | None = None,
        updated_since: datetime | None = None,
        updated_until: datetime | None = None,
        limit: int = 50,
        after: str | None = None,
    ) -> SessionPage:
        """A page of the tenant's sessions the filters match, newest first (``state``:
        ``idle`` or an active turn's)."""
        return self._send(sessions(query(**_given(locals()))))

    def all_turns(self, *, page: int = 500, **filters: Any) -> Iterator[Turn]:
        """Every turn the filters match, newest first, page after page."""
        for found in _pages(self.turns, page, filters):
            yield from found.turns

    def all_sessions(self, *, page: int = 500, **filters: Any) -> Iterator[Session]:
        """Every session the filters match, newest first, page after page."""
        for found in _pages(self.sessions, page, filters):
            yield from found.sessions


class AsyncSearchApi:
    """``client.search`` of the async client: ``SearchApi``'s methods, awaited."""

    def __init__(self, send: AsyncSend) -> None:
        self._send = send

    async def turns(
        self,
        *,
        state: States = None,
        agent: str | None = None,
        agent_version: str | None = None,
        error: str | None = None,
        project: str | None = None,
        metadata: Mapping[str, str] | None = None,
        created_since: datetime | None = None,
        created_until: datetime | None = None,
        updated_since: datetime | None = None,
        updated_until: datetime | None = None,
        limit: int = 50,
        after: str | None = None,
    ) -> TurnPage:
        """A page of the tenant's turns the filters match, newest first."""
        return await self._send(turns(query(**_given(locals()))))

    async def sessions(
        self,
        *,
        state: States = None,
        agent: str | None = None,
        project: str | None = None,
        metadata: Mapping[str, str] | None = None,
        created_since: datetime | None = None,
        created_until: datetime | None = None,
        updated_since: datetime | None = None,
        updated_until: datetime | None = None,
        limit: int = 50,
        after: str | None = None,
    ) -> SessionPage:
        """A page of the tenant's sessions the filters match, newest first."""
        return await self._send(sessions(query(**_given(locals()))))

    async def all_turns(self, *, page: int = 500, **filters: Any) -> AsyncIterator[Turn]:
        """Every turn the filters match, newest first, page after page."""
        async for found in _async_pages(self.turns, page, filters):
            for turn in found.turns:
                yield turn

    async def all_sessions(self, *, page: int = 500, **filters: Any) -> AsyncIterator[Session]:
        """Every session the filters match, newest first, page after page."""
        async for found in _async_pages(self.sessions, page, filters):
            for session in found.sessions:
                yield session
