"""SIGKILL around a session's erasure (docs/erasure.md), then the erasure sweep and a
new process go on with it:

``before_tombstone``       nothing happened: the session reads as before (or, past its
                           TTL, 410 as expired, and the sweep tombstones it again);
``after_tombstone``        the tombstone committed and nothing was erased or sent: every
                           read is 410 at once, and the sweep finds the erasure stalled;
``between_erase_batches``  a batch committed and the next was not sent: a part of the
                           session's rows is gone, every read still 410.

Either way the session ends erased (its tombstone's ``erased_at``), no row of it left
in any table but the tombstone, and nothing of it readable in between. The API's
DELETE and the eraser task (a worker) each reach the tombstone's points: the API for a
DELETE, the worker for a session past its TTL.
"""

from __future__ import annotations

import signal
import uuid
from typing import Any

import httpx
import psycopg
import pytest

from tests.chaos.conftest import ApiHandle, Chaos, signalled, turn_body
from tests.journals import long_journal
from tests.procs import wait_for
from tests.webhook_receiver import Receiver
from turnkeep.runtime.obs.faults import FaultPoint
from turnkeep.store.records import TombstoneRecord

#: 750 turns of four events: 3,000 events, erased 500 rows a statement
TURNS = 750
FAST = {
    "TURNKEEP_ERASURE_INTERVAL": "0.5",
    "TURNKEEP_ERASURE_GRACE": "1",
    "TURNKEEP_ERASURE_BATCH": "500",
}


def _pg(url: str) -> str:
    return url.replace("postgresql+psycopg://", "postgresql://", 1)


def _rows(database_url: str, tenant: str, sid: str) -> dict[str, int]:
    """The session's rows in its tables, read as the owner."""
    counts = {}
    with psycopg.connect(_pg(database_url)) as conn:
        for table in ("sessions", "turns", "events", "session_tombstones"):
            row = conn.execute(
                f"SELECT count(*) FROM {table} WHERE tenant_id = %s AND session_id = %s",
                (tenant, sid),
            ).fetchone()
            assert row is not None
            counts[table] = int(row[0])
    return counts


def _world(chaos: Chaos, sid: str, *, expired: bool) -> None:
    long_journal(chaos.database_url, chaos.tenant, sid, TURNS)
    with psycopg.connect(_pg(chaos.database_url), autocommit=True) as conn:
        conn.execute("ANALYZE turns, events")
        if expired:  # its TTL ran out a moment ago
            conn.execute(
                "UPDATE sessions SET expires_after = 1, expires_at = now()"
                " WHERE tenant_id = %s AND session_id = %s",
                (chaos.tenant, sid),
            )


def _status(api: ApiHandle, sid: str) -> int:
    return httpx.get(f"{api.url}/v1/sessions/{sid}", headers=api.headers, timeout=30).status_code


def _erased(chaos: Chaos, sid: str) -> TombstoneRecord:
    def done() -> Any:
        gone = chaos.store.reads.get_tombstone(chaos.tenant, sid)
        return gone if gone is not None and gone.erased else None

    found = wait_for(done, 90, interval=0.3, what="the session erased")
    assert isinstance(found, TombstoneRecord)
    rows = _rows(chaos.database_url, chaos.tenant, sid)
    assert rows == {"sessions": 0, "turns": 0, "events": 0, "session_tombstones": 1}, rows
    return found


@pytest.mark.chaos
@pytest.mark.parametrize(
    "point",
    [FaultPoint.BEFORE_TOMBSTONE, FaultPoint.AFTER_TOMBSTONE, FaultPoint.BETWEEN_ERASE_BATCHES],
)
def test_sigkill_of_the_eraser_then_the_sweep_finishes_it(
    chaos: Chaos, sid: str, point: FaultPoint
) -> None:
    """The worker's points: a session past its TTL, erased by the sweep's task."""
    _world(chaos, sid, expired=True)
    api = chaos.api()
    assert _status(api, sid) == 410  # gone from its expiry on, before any sweep
    victim = chaos.procs.worker(
        {**FAST, "TURNKEEP_FAULTS": f"{point.value}=kill-once", "TURNKEEP_FAULTS_SESSIONS": sid}
    )
    chaos.procs.beat(FAST)
    wait_for(signalled(victim, signal.SIGKILL), 60, what=f"the eraser SIGKILLed at {point}")

    rows = _rows(chaos.database_url, chaos.tenant, sid)
    gone = chaos.store.reads.get_tombstone(chaos.tenant, sid)
    if point is FaultPoint.BEFORE_TOMBSTONE:
        assert gone is None and rows["events"] == 4 * TURNS
    elif point is FaultPoint.AFTER_TOMBSTONE:
        assert gone is not None and gone.reason == "expired" and not gone.erased
        assert rows == {"sessions": 1, "turns": TURNS, "events": 4 * TURNS, "session_tombstones": 1}
    else:  # the first batch of events went, whole, and no more
        assert gone is not None and not gone.erased
        assert rows["events"] == 4 * TURNS - 500 and rows["turns"] == TURNS
    assert _status(api, sid) == 410

    chaos.procs.worker(FAST)
    tombstone = _erased(chaos, sid)
    assert tombstone.reason == "expired" and tombstone.deleted_by is None
    assert _status(api, sid) == 410


@pytest.mark.chaos
@pytest.mark.parametrize("point", [FaultPoint.BEFORE_TOMBSTONE, FaultPoint.AFTER_TOMBSTONE])
def test_sigkill_of_the_api_around_the_tombstone(chaos: Chaos, sid: str, point: FaultPoint) -> None:
    """The API's points: a DELETE whose process dies around its transaction."""
    _world(chaos, sid, expired=False)
    victim = chaos.api({"TURNKEEP_FAULTS": f"{point.value}=kill-once"})
    with pytest.raises(httpx.TransportError):
        httpx.delete(f"{victim.url}/v1/sessions/{sid}", headers=victim.headers, timeout=60)
    wait_for(signalled(victim.proc, signal.SIGKILL), 60, what=f"api SIGKILLed at {point}")
    api = chaos.api()
    chaos.procs.worker(FAST)
    chaos.procs.beat(FAST)
    if point is FaultPoint.BEFORE_TOMBSTONE:
        # nothing happened: the session reads as before, and the client's retry deletes
        assert chaos.store.reads.get_tombstone(chaos.tenant, sid) is None
        assert _status(api, sid) == 200
        again = httpx.delete(f"{api.url}/v1/sessions/{sid}", headers=api.headers, timeout=30)
        assert again.status_code == 202, again.text
    else:
        # gone from the commit on; the erasure the dead API never sent is the sweep's
        assert _status(api, sid) == 410
        assert _rows(chaos.database_url, chaos.tenant, sid)["events"] == 4 * TURNS
    tombstone = _erased(chaos, sid)
    assert (tombstone.reason, tombstone.deleted_by) == ("deleted", "chaos")
    again = httpx.delete(f"{api.url}/v1/sessions/{sid}", headers=api.headers, timeout=30)
    assert again.status_code == 200 and again.json()["erased_at"] is not None


#: the workflow node's webhook goes to a receiver on 127.0.0.1 (tests/webhook_receiver.py)
DELIVERY = {
    "TURNKEEP_WEBHOOK_SECRET": "whsec-erasure",
    "TURNKEEP_WEBHOOK_ALLOW_PRIVATE": "1",
    "TURNKEEP_WEBHOOK_TIMEOUT": "1",
}


@pytest.mark.chaos
def test_a_delivery_held_before_its_post_never_leaves_once_the_session_is_deleted(
    chaos: Chaos,
) -> None:
    """The deliverer claimed the settled turn's webhook and is held at
    ``before_delivery``; the session is deleted meanwhile. The send re-checks under the
    tombstone (``hold_delivery``): nothing reaches the receiver after DELETE answered."""
    api = chaos.api(DELIVERY)
    worker = chaos.procs.worker({**DELIVERY, "TURNKEEP_FAULTS": "before_delivery=sleep:4"})
    run_id = f"run-{uuid.uuid4().hex[:8]}"
    with Receiver() as rx:
        r = httpx.post(
            f"{api.url}/v1/workflows/{run_id}/nodes/n1/turns",
            json={**turn_body("steps=1"), "callback_url": rx.url},
            headers=api.headers,
            timeout=60,
        )
        assert r.status_code == 202, r.text
        sid, tid = r.json()["session_id"], r.json()["turn_id"]

        def claimed() -> bool:
            wh = chaos.store.outbox.get_webhook(chaos.tenant, sid, tid)
            return wh is not None and wh.attempts == 1

        wait_for(claimed, 60, interval=0.05, what="the webhook claimed, its POST held")
        d = httpx.delete(f"{api.url}/v1/sessions/{sid}", headers=api.headers, timeout=30)
        assert d.status_code == 202, d.text
        # the held send woke: either it re-checked and dropped, or (unfenced) it posted
        wait_for(
            lambda: "webhook not sent" in worker.text() or rx.deliveries(),
            30,
            what="the held delivery went on",
        )
        assert rx.deliveries() == []
    _erased(chaos, sid)


@pytest.mark.chaos
def test_sigkill_after_the_copies_went_leaves_the_rest_to_the_sweep(chaos: Chaos, sid: str) -> None:
    """The first batches are the copies made from the session (a dataset case made from
    its turn, an experiment result quoting it): killed right after the first of them
    committed, the copies are gone whole and its journal is untouched; the next task
    goes on from there."""
    _world(chaos, sid, expired=True)
    case = '{"messages": [{"role": "user", "content": "copied-mark"}], "attachments": []}'
    score = '{"turn_state": "completed", "assertions": [{"detail": "copied-mark"}]}'
    with psycopg.connect(_pg(chaos.database_url), autocommit=True) as conn:
        conn.execute(
            "INSERT INTO eval_datasets (tenant_id, name, version, cases_hash, case_count,"
            " created_by) VALUES (%s, 'ds', 1, 'h', 1, 'chaos')",
            (chaos.tenant,),
        )
        conn.execute(
            "INSERT INTO eval_cases (tenant_id, dataset, version, case_id, ordinal, input,"
            " assertions, source) VALUES (%s, 'ds', 1, 'c1', 1, %s, '[]', %s)",
            (chaos.tenant, case, f'{{"session_id": "{sid}", "turn_id": "old-1"}}'),
        )
        conn.execute(
            "INSERT INTO eval_experiments (tenant_id, experiment_id, dataset,"
            " dataset_version, agent_name, agent_version, agent_hash, spec_hash, approvals,"
            " concurrency, state, created_by) VALUES (%s, 'x1', 'ds', 1, 'counter', '1',"
            " 'h', 'h', '{}', 1, 'completed', 'chaos')",
            (chaos.tenant,),
        )
        conn.execute(
            "INSERT INTO eval_results (tenant_id, experiment_id, case_id, ordinal, state,"
            " session_id, turn_id, passed, score) VALUES (%s, 'x1', 'c1', 1, 'scored',"
            " 'ev-x1-c1', 'ev-x1-c1', true, %s)",
            (chaos.tenant, score),
        )
    victim = chaos.procs.worker(
        {
            **FAST,
            "TURNKEEP_FAULTS": "between_erase_batches=kill-once",
            "TURNKEEP_FAULTS_SESSIONS": sid,
        }
    )
    chaos.procs.beat(FAST)
    wait_for(signalled(victim, signal.SIGKILL), 60, what="the eraser SIGKILLed after a batch")

    def copies() -> str:
        with psycopg.connect(_pg(chaos.database_url)) as conn:
            rows = conn.execute(
                "SELECT r::text FROM eval_cases r UNION ALL SELECT r::text FROM eval_results r"
            ).fetchall()
        return "\n".join(r[0] for r in rows)

    # the first batch with rows (the result's scrub) committed whole, and no more
    assert "copied-mark" in copies() and copies().count("copied-mark") == 1
    gone = chaos.store.reads.get_tombstone(chaos.tenant, sid)
    assert gone is not None and not gone.erased
    assert _rows(chaos.database_url, chaos.tenant, sid)["events"] == 4 * TURNS

    chaos.procs.worker(FAST)
    _erased(chaos, sid)
    assert "copied-mark" not in copies()
