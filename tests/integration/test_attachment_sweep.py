"""The attachment sweep as deployed: beat schedules ``turnkeep.sweep_attachments`` and a
worker runs it (recovery/attachments.py, docs/fork-and-attachments.md)."""

from __future__ import annotations

import hashlib
from typing import Any

import psycopg

from tests.procs import wait_for
from turnkeep.store.attachments import AttachmentState
from turnkeep.store.facade import Store
from turnkeep.store.new_turn import NewTurn

GRACE = 600


def _session(store: Store, tenant: str, sid: str) -> None:
    """A session with no work on its lane: its one turn is cancelled while queued, so
    the worker's scans have nothing to run in it."""
    store.turns.admit(
        NewTurn(
            tenant_id=tenant,
            session_id=sid,
            turn_id="t1",
            agent_name="demo",
            agent_hash="h",
            input_hash="i",
            input={"messages": []},
            output_schema=None,
            budget=None,
        )
    )
    store.turns.request_cancel(tenant, sid, "t1", subject="tester")


def _attach(store: Store, tenant: str, sid: str, aid: str, *, ready: bool) -> None:
    data = aid.encode()
    sha = hashlib.sha256(data).hexdigest()
    meta = {"filename": "a.txt", "content_type": "text/plain", "size": len(data), "sha256": sha}
    assert store.attachments.insert_attachment(tenant, sid, aid, **meta) is not None
    if ready:
        assert store.attachments.attachment_content(tenant, sid, aid, data=data, sha256=sha)
        assert store.attachments.attachment_ready(tenant, sid, aid) is not None


def _age(database_url: str, tenant: str, sid: str, aids: list[str], seconds: int) -> None:
    """As if the rows had last moved ``seconds`` ago (the owner: past row security)."""
    url = database_url.replace("postgresql+psycopg://", "postgresql://")
    with psycopg.connect(url, autocommit=True) as conn:
        n = conn.execute(
            "UPDATE attachments SET updated_at = now() - make_interval(secs => %s) "
            "WHERE tenant_id = %s AND session_id = %s AND attachment_id = ANY(%s)",
            (seconds, tenant, sid, aids),
        ).rowcount
    assert n == len(aids)


def test_beat_sweeps_what_was_left_pending_or_deleting_past_the_grace(
    procs: Any, store: Store, database_url: str, tenant: str, sid: str
) -> None:
    _session(store, tenant, sid)
    # an upload cut short after its first statement, and a deletion after its first
    _attach(store, tenant, sid, "stalled", ready=False)
    _attach(store, tenant, sid, "going", ready=True)
    assert store.attachments.attachment_deleting(tenant, sid, "going")
    # an upload still within the grace (its request may be on its way), and a ready
    # attachment as old as the stale ones: neither is the sweep's
    _attach(store, tenant, sid, "uploading", ready=False)
    _attach(store, tenant, sid, "kept", ready=True)
    _age(database_url, tenant, sid, ["stalled", "going", "kept"], 2 * GRACE)
    _age(database_url, tenant, sid, ["uploading"], GRACE // 2)

    env = {
        "TURNKEEP_ATTACHMENT_SWEEP_INTERVAL": "0.5",
        "TURNKEEP_ATTACHMENT_SWEEP_GRACE": str(GRACE),
    }
    procs.worker(env)
    procs.beat(env)

    def swept() -> bool:
        return all(
            store.attachments.get_attachment(tenant, sid, a) is None for a in ("stalled", "going")
        )

    wait_for(swept, 60, what="beat's sweep to delete the stale attachments")
    uploading = store.attachments.get_attachment(tenant, sid, "uploading")
    assert uploading is not None and uploading.state is AttachmentState.PENDING
    kept = store.attachments.get_attachment(tenant, sid, "kept")
    assert kept is not None and kept.state is AttachmentState.READY
    assert store.attachments.attachment_data(tenant, sid, "kept")[1] == b"kept"
    log = "".join(p.text() for p in procs.started)
    assert "turnkeep.sweep_attachments" in log
