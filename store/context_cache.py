"""A worker's cache of its sessions' context windows (docs/context.md, "A worker's
cache"): the window the last start of a session read, its rows' messages decoded, so
the next start of that session is sent only the rows from that turn's admission on
and a chat turn costs what a fresh one does.

Staleness is the database's to say, never assumed here: the start statement
(store/sql/turns.sql ``start_turn``) compares what the window was read under (the
session's context epoch, which no other session ever had and which a prune or a
tombstone replaces; the newest compaction's seq; the turn's ``turn.accepted`` seq) and
answers ``warm`` or sends the whole window again. Entries are keyed by tenant and
session, bounded by entries and by stored bytes, least recently used out first.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from turnkeep.runtime.messages import Message
from turnkeep.runtime.plan import decode
from turnkeep.store.records import EventRecord

#: sessions a worker keeps the window of, and the stored bytes of them all
CACHED_SESSIONS = 256
CACHED_BYTES = 256 << 20


class WindowRow(NamedTuple):
    """A row of a window as the start statement sent it."""

    event: EventRecord
    #: its turn's ordinal (None: its turn row is not there; -1: the base, first)
    ordinal: int | None
    #: its data's stored bytes, as the statement counts them against ``window_bytes``
    size: int


@dataclass(frozen=True)
class Window:
    """One session's context window as a start of it read it."""

    #: sessions.context_epoch when it was read
    epoch: int
    #: the seq of the base (the newest compaction), or None
    base_seq: int | None
    #: the seq of the ``turn.accepted`` of the turn it was read for: every row before
    #: it is the database's too, the rows from it on are sent again
    floor: int
    #: the earlier turns' rows, in the statement's order (turn ordinal, then seq)
    rows: tuple[WindowRow, ...]
    #: each row's messages, by seq (runtime/plan.py ``decode``)
    decoded: Mapping[int, tuple[Message, ...]]

    @property
    def size(self) -> int:
        return sum(r.size for r in self.rows)

    def since(self) -> dict[str, Any]:
        """The start statement's parameters that name this window."""
        return {"since_epoch": self.epoch, "since_floor": self.floor, "since_base": self.base_seq}


#: what a start names when it has no window of the session
NO_WINDOW: dict[str, Any] = {"since_epoch": None, "since_floor": None, "since_base": None}


def _order(row: WindowRow) -> tuple[bool, int, int]:
    # the statement's ORDER BY x.ordinal, x.seq: NULL ordinals last
    return (row.ordinal is None, row.ordinal or 0, row.event.seq)


def extended(
    cached: Window,
    sent: Sequence[WindowRow],
    *,
    full: bool,
    window_rows: int,
    window_bytes: int,
) -> tuple[WindowRow, ...]:
    """The window the statement would have sent whole: ``cached``'s rows before its
    floor and the rows it sent from there on (``sent``, the base among them when it is
    there: the kept turn may have written it), the newest ``window_rows`` of them
    within ``window_bytes`` (the base, ordinal -1, is not counted), in order.
    ``full``: the rows from the floor on filled the window alone (the statement cut
    them: a row it did not send outweighs every kept one), so none kept counts.
    """
    floor = cached.floor
    kept = [r for r in cached.rows if r.event.seq < floor and (not full or r.ordinal == -1)]
    # both are in order: sorted again only when a row sent goes before one kept (an
    # earlier turn's row after the floor: it ran while that turn was queued)
    ordered = not kept or not sent or _order(kept[-1]) <= _order(sent[0])
    kept += sent
    counted = [r for r in kept if r.ordinal != -1]
    total = sum(r.size for r in counted)
    if len(counted) > window_rows or total > window_bytes:
        # the oldest go: walk from the newest as the statement's running sum does
        newest = sorted(counted, key=lambda r: r.event.seq, reverse=True)
        chosen: set[int] = set()
        upto = 0
        for r in newest[:window_rows]:
            upto += r.size
            if upto > window_bytes:
                break
            chosen.add(r.event.seq)
        kept = [r for r in kept if r.ordinal == -1 or r.event.seq in chosen]
    if not ordered:
        kept.sort(key=_order)
    return tuple(kept)


class ContextCache:
    """Windows by (tenant, session), least recently used out first. Thread-safe: a
    worker's threads share it."""

    def __init__(self, *, sessions: int = CACHED_SESSIONS, max_bytes: int = CACHED_BYTES):
        self.sessions, self.max_bytes = sessions, max_bytes
        self._windows: OrderedDict[tuple[str, str], tuple[Window, int]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        #: starts that extended a kept window, and starts that read the whole one
        self.warm = self.whole = 0

    def get(self, tenant_id: str, session_id: str) -> Window | None:
        with self._lock:
            found = self._windows.get((tenant_id, session_id))
            if found is None:
                return None
            self._windows.move_to_end((tenant_id, session_id))
            return found[0]

    def put(self, tenant_id: str, session_id: str, window: Window) -> None:
        size = window.size
        with self._lock:
            self._pop((tenant_id, session_id))
            if size > self.max_bytes:
                return
            self._windows[(tenant_id, session_id)] = (window, size)
            self._bytes += size
            while len(self._windows) > self.sessions or self._bytes > self.max_bytes:
                self._pop(next(iter(self._windows)))

    def drop(self, tenant_id: str, session_id: str) -> None:
        """Forget a session's window (its erasure: what it held is not kept here)."""
        with self._lock:
            self._pop((tenant_id, session_id))

    def _pop(self, key: tuple[str, str]) -> None:
        found = self._windows.pop(key, None)
        if found is not None:
            self._bytes -= found[1]

    def __len__(self) -> int:
        return len(self._windows)


def window_of(
    cache: ContextCache,
    row: Mapping[str, Any],
    sent: Sequence[WindowRow],
    cached: Window | None,
    *,
    window_rows: int,
    window_bytes: int,
) -> Window:
    """The window a start read (``row``: start_turn's; ``sent``: its earlier turns'
    rows): ``cached`` extended when the statement found it still holds (``warm``),
    else what it sent, each row's messages decoded once; counted on ``cache``."""
    if cached is not None and row["warm"]:
        cache.warm += 1
        rows = extended(
            cached,
            sent,
            full=bool(row["window_full"]),
            window_rows=window_rows,
            window_bytes=window_bytes,
        )
        fresh = decode([r.event for r in sent])
        known = cached.decoded
        decoded = {
            r.event.seq: fresh[r.event.seq] if r.event.seq in fresh else known[r.event.seq]
            for r in rows
        }
    else:
        cache.whole += 1
        rows = tuple(sent)
        decoded = decode([r.event for r in rows])
    return Window(
        epoch=row["context_epoch"],
        base_seq=row["base_seq"],
        floor=row["accepted_seq"],
        rows=rows,
        decoded=decoded,
    )
