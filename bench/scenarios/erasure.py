"""Erasing a session (docs/erasure.md): how long a session of 20,000 and of 100,000
events takes to erase, and its largest transaction. Each session is written straight
into the bench database (tests/journals.py: completed turns of four events, analyzed
as autovacuum would have), tombstoned (``Store.erasure.tombstone``), then erased by the
worker's own loop (worker/erasure.py) with every statement timed:

* ``erase_20k_events_s``, ``erase_100k_events_s``: the loop, from its first batch to the
  statement that deletes the session row (the tombstone's transaction apart:
  ``tombstone_ms``);
* ``erase_largest_batch_ms``: the slowest single statement of either, each its own
  transaction of at most ``TURNKEEP_ERASURE_BATCH`` (5,000) rows;
* ``erase_statements_100k``: how many statements the 100,000 took.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

import psycopg

from bench.context import Run
from tests.journals import long_journal
from turnkeep.store.erasure import Reason
from turnkeep.store.erasure_registry import Part
from turnkeep.store.facade import Store
from turnkeep.store.records import Tombstoned, TombstoneRecord
from turnkeep.worker.erasure import erase_session

BATCH = 5000


class _Timed:
    """The store as the eraser sees it, each statement timed."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.seconds: list[float] = []
        # the eraser's two parts (worker/erasure.py Erasing), both timed here
        self.reads = self.erasure = self

    def get_tombstone(self, tenant_id: str, session_id: str) -> TombstoneRecord | None:
        return self.store.reads.get_tombstone(tenant_id, session_id)

    def tombstone(self, tenant_id: str, session_id: str, **kw: Any) -> Tombstoned:
        return self.store.erasure.tombstone(tenant_id, session_id, **kw)

    def erase_rows(self, tenant_id: str, session_id: str, part: Part, *, batch: int) -> int:
        t0 = time.perf_counter()
        try:
            return self.store.erasure.erase_rows(tenant_id, session_id, part, batch=batch)
        finally:
            self.seconds.append(time.perf_counter() - t0)

    def finish_erasure(self, tenant_id: str, session_id: str) -> TombstoneRecord | None:
        t0 = time.perf_counter()
        try:
            return self.store.erasure.finish_erasure(tenant_id, session_id)
        finally:
            self.seconds.append(time.perf_counter() - t0)


class _Quiet:
    def deleted(self, tenant_id: str, session_id: str) -> None:
        """Nobody follows the bench's sessions."""


def _one(r: Run, tenant: str, events: int) -> dict[str, Any]:
    sid = f"erase-{events}-{uuid.uuid4().hex[:6]}"
    long_journal(r.env.pg_url, tenant, sid, events // 4)
    with psycopg.connect(r.env.pg_url, autocommit=True) as conn:
        conn.execute("ANALYZE turns, events")
    store = r.c.store
    t0 = time.perf_counter()
    store.erasure.tombstone(tenant, sid, reason=Reason.DELETED, deleted_by="bench")
    tombstone_ms = 1000.0 * (time.perf_counter() - t0)
    timed = _Timed(store)
    t0 = time.perf_counter()
    report = erase_session(timed, _Quiet(), tenant, sid, batch=BATCH)
    total = time.perf_counter() - t0
    if not report.erased:
        raise RuntimeError(f"the erasure of {sid} did not finish")
    return {
        "events": events,
        "rows": report.rows,
        "statements": len(timed.seconds),
        "total_s": total,
        "largest_batch_ms": 1000.0 * max(timed.seconds),
        "tombstone_ms": tombstone_ms,
    }


def run(r: Run) -> dict[str, Any]:
    tenant = r.tenant("erase")
    small, large = _one(r, tenant, 20_000), _one(r, tenant, 100_000)
    r.figures["erase_20k_events_s"] = small["total_s"]
    r.figures["erase_100k_events_s"] = large["total_s"]
    r.figures["erase_largest_batch_ms"] = max(small["largest_batch_ms"], large["largest_batch_ms"])
    r.figures["erase_statements_100k"] = float(large["statements"])
    return {"batch": BATCH, "20k": small, "100k": large}
