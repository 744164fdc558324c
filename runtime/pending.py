"""A turn's wait, parsed once: ``turns.pending_input`` as a typed value.

A parked turn keeps the request it waits on (``input.requested``'s payload), and once
it is answered the answer beside it (``resolved``, ``response``, ``response_hash``,
``by``: store/sql/turns.sql ``resolve_input``). Approvals asked together keep the
group too (runtime/input_groups.py): the top level is the first request still open,
and ``group`` every request of the wait with its answer once it has one. The store
reads the column into a ``TurnWait`` where rows become records (store/rows.py), and every
reader takes its attributes; the JSON is compatibility data, kept as
runtime/jsonrecord.py keeps a payload's.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from turnkeep.runtime.jsonrecord import key
from turnkeep.runtime.payloads import InputRequested


def expired(expires_at: Any, now: datetime | None = None) -> bool:
    """Whether a request expiring at ``expires_at`` (ISO 8601) has."""
    return datetime.fromisoformat(str(expires_at)) <= (now or datetime.now(UTC))


class AskedInput(InputRequested, frozen=True):
    """One request of a wait, with its answer once it has one."""

    #: answered (or settled unanswered by the expiry scan: ``response.expired``)
    resolved: bool = key(False)
    #: the answer as journalled (a secret's only as ``{"secret": true}``)
    response: dict[str, Any] | None = key()
    response_hash: str | None = key()
    by: str | None = key()

    def expired(self, now: datetime | None = None) -> bool:
        return expired(self.expires_at, now)

    @property
    def expired_unanswered(self) -> bool:
        """Settled by the expiry scan, nobody having answered."""
        return self.resolved and bool((self.response or {}).get("expired"))


class TurnWait(AskedInput, frozen=True):
    """``turns.pending_input``: the request the turn waits on and, for requests asked
    together, every one of them (``group``)."""

    #: every request of a wait asked together, in call order (None: asked alone)
    group: list[AskedInput] | None = key(nested=AskedInput)

    @property
    def is_group(self) -> bool:
        return isinstance(self.group, list)

    def requests(self) -> list[AskedInput]:
        """Every request of the wait, answered or not, in call order."""
        if not isinstance(self.group, list):
            return [self]
        return [r for r in self.group if isinstance(r, AskedInput)]

    def open_requests(self) -> list[AskedInput]:
        """The requests nobody has answered yet, in call order."""
        return [r for r in self.requests() if not r.resolved]

    def member(self, request_id: str) -> AskedInput | None:
        """The request ``request_id`` of the wait (answered or not), or None."""
        return next((r for r in self.requests() if r.request_id == request_id), None)

    def due(self, now: datetime | None = None) -> list[str]:
        """The open requests past their expiry: the scan settles them together."""
        return [r.request_id for r in self.open_requests() if r.expired(now)]
