"""Search (docs/search.md): the tenant's turns across its sessions (``GET /v1/turns``)
and its sessions (``GET /v1/sessions``), filtered by plain query parameters and
paged newest first by a keyset cursor, as the caller may see them (no session of
another owner's project; another tenant's never, by tenant and row security).

The query language: each parameter is one filter and they are ANDed; ``state`` and
``metadata`` may repeat (states ORed, ``metadata=key=value`` pairs ANDed); times are
RFC 3339 with an offset, ``*_since`` inclusive and ``*_until`` exclusive. A parameter
the route does not know is a 422, as is a bad value, so a misspelt filter is never
silently ignored. ``after`` is the ``next`` of the previous page: the creation time
and tie-breaker of its last row, so a page never repeats or skips a row however many
are admitted meanwhile.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, model_validator

from turnkeep.api.auth import Principal
from turnkeep.api.errors import RequestInvalid
from turnkeep.api.resources import ApiResources
from turnkeep.api.service import pages
from turnkeep.api.service.requests import ID_REGEX, NO_NUL
from turnkeep.api.service.wire import session_shown, turn_json
from turnkeep.models import TurnState
from turnkeep.runtime import metadata as labels
from turnkeep.runtime.numerals import ascii_int
from turnkeep.store.search import Filters

#: rows a page holds by default, and at most (as the other listings: api/http/sessions.py)
PAGE = 50
MAX_PAGE = 500
#: a filter ``key=value`` as the query writes it (runtime/metadata.py's bounds)
PAIR = labels.KEY_PATTERN.rstrip("$") + f"=[^\\x00]{{0,{labels.MAX_VALUE}}}$"

Cursor = Annotated[
    str | None,
    Field(max_length=200, pattern=r"^[A-Za-z0-9_\-=]+$", description="`next` of the previous page"),
]
Name = Annotated[str | None, Field(min_length=1, max_length=128, pattern=NO_NUL)]
Since = Annotated[AwareDatetime | None, Field(description="inclusive, RFC 3339 with an offset")]
Until = Annotated[AwareDatetime | None, Field(description="exclusive, RFC 3339 with an offset")]


class _Query(BaseModel):
    """The filters turns and sessions share."""

    model_config = ConfigDict(extra="forbid")

    agent: Name = None
    project: Annotated[str | None, Field(pattern=ID_REGEX)] = None
    metadata: Annotated[
        list[Annotated[str, Field(pattern=PAIR)]],
        Field(max_length=labels.MAX_LABELS, description="key=value; several are ANDed"),
    ] = []
    created_since: Since = None
    created_until: Until = None
    updated_since: Since = None
    updated_until: Until = None
    after: Cursor = None
    limit: Annotated[int, Field(ge=1, le=MAX_PAGE)] = PAGE

    @model_validator(mode="after")
    def _ranges(self) -> _Query:
        for what in ("created", "updated"):
            since, until = getattr(self, f"{what}_since"), getattr(self, f"{what}_until")
            if since is not None and until is not None and since >= until:
                raise ValueError(f"{what}_since must be before {what}_until")
        return self

    def filters(self, **more: Any) -> Filters:
        """The store's filters; a metadata pair named twice is a 422."""
        try:
            pairs = labels.parse_filters(self.metadata)
        except ValueError as exc:
            raise RequestInvalid("query.metadata", str(exc)) from None
        return Filters(
            agent=self.agent,
            project=self.project,
            metadata=pairs,
            created_since=self.created_since,
            created_until=self.created_until,
            updated_since=self.updated_since,
            updated_until=self.updated_until,
            **more,
        )


class TurnQuery(_Query):
    """``GET /v1/turns``: the tenant's turns across its sessions."""

    state: Annotated[list[TurnState], Field(max_length=7, description="ORed")] = []
    agent_version: Name = None
    #: the code of a failed (or cut) turn's error
    error: Annotated[str | None, Field(pattern=r"^[a-z_]{1,64}$")] = None


class SessionQuery(_Query):
    """``GET /v1/sessions``: a session's state is its active turn's, ``idle`` without."""

    state: Annotated[
        list[Literal["idle"] | TurnState], Field(max_length=8, description="ORed")
    ] = []


def _position(before: str | None) -> tuple[datetime, str] | None:
    return None if before is None else pages.position(before)


def turns(services: ApiResources, principal: Principal, query: TurnQuery) -> dict[str, Any]:
    """A page of the turns ``query`` matches, newest first."""
    position = _position(query.after)
    ordinal = None
    if position is not None:
        number = ascii_int(position[1])
        if number is None:
            raise pages.bad_cursor()
        ordinal = (position[0], number)
    found = services.store.search.search_turns(
        principal.tenant,
        subject=principal.subject,
        filters=query.filters(
            states=tuple(dict.fromkeys(query.state)),
            agent_version=query.agent_version,
            error=query.error,
        ),
        limit=query.limit,
        before=ordinal,
    )
    last = found[-1] if len(found) == query.limit else None
    return {
        "turns": [turn_json(t) for t in found],
        "next": None if last is None else pages.cursor(last.created_at, str(last.ordinal)),
    }


def sessions(services: ApiResources, principal: Principal, query: SessionQuery) -> dict[str, Any]:
    """A page of the sessions ``query`` matches, newest first, each with its state."""
    position = _position(query.after)
    filters = query.filters(states=tuple(dict.fromkeys(query.state)))
    store, tenant, subject = services.store, principal.tenant, principal.subject
    if filters == Filters():
        # the plain listing, on its prepared statement (store/reads.py)
        rows = store.reads.list_sessions(
            tenant, subject=subject, limit=query.limit, before=position
        )
    else:
        rows = store.search.search_sessions(
            tenant, subject=subject, filters=filters, limit=query.limit, before=position
        )
    found = []
    for row in rows:
        found.append(session_shown(row.session, row.active_state, row.active_turn))
    last = rows[-1].session if len(rows) == query.limit else None
    return {
        "sessions": found,
        "next": None if last is None else pages.cursor(last.created_at, last.session_id),
    }
