"""Kill the API right before and right after the transaction that forks a session
(Store.forks.fork), and check what a client sees when it forks again with the same
Idempotency-Key: before, nothing of the fork exists (no session, turn or event row)
and the retry forks (201); after, the fork is whole and the retry answers it (200).
Either way the fork's journal is the source's up to the seq, the source is untouched,
and the fork runs a new turn at the next seq on a real worker; the invariants hold.
"""

from __future__ import annotations

import signal
import uuid

import httpx
import psycopg
import pytest

from tests.chaos.conftest import Chaos, signalled
from tests.integration.test_fork import effects_counted_once
from tests.procs import wait_for
from turnkeep.runtime.obs.faults import FaultPoint
from turnkeep.runtime.states import TurnState
from turnkeep.store.errors import NotFound


def _rows(database_url: str, tenant: str, sid: str) -> dict[str, int]:
    """Rows of the session in each table, as the owner sees them (no policy)."""
    url = database_url.replace("postgresql+psycopg://", "postgresql://")
    with psycopg.connect(url) as conn:
        return {
            table: int(
                conn.execute(
                    f"SELECT count(*) FROM {table} WHERE tenant_id = %s AND session_id = %s",
                    (tenant, sid),
                ).fetchone()[0]  # type: ignore[index]
            )
            for table in ("sessions", "turns", "events")
        }


def _journal(chaos: Chaos, sid: str) -> list[tuple[object, ...]]:
    events, _ = chaos.store.reads.list_events(chaos.tenant, sid, after=0, limit=1000)
    return [(e.seq, e.turn_id, e.type, e.step, e.fence, e.data, e.created_at) for e in events]


@pytest.mark.chaos
@pytest.mark.parametrize("point", [FaultPoint.BEFORE_FORK, FaultPoint.AFTER_FORK])
def test_sigkill_around_the_fork(chaos: Chaos, sid: str, point: FaultPoint) -> None:
    chaos.procs.beat()
    chaos.procs.worker()
    for _ in range(2):
        tid = chaos.admit(sid, "steps=1")
        assert chaos.wait_terminal(sid, tid).state is TurnState.COMPLETED
    head = chaos.store.reads.get_session(chaos.tenant, sid).head_seq
    source = _journal(chaos, sid)

    new = f"fork-{uuid.uuid4().hex[:10]}"
    path = f"/v1/sessions/{sid}/fork"
    victim = chaos.api({"TURNKEEP_FAULTS": f"{point.value}=kill-once"})
    with pytest.raises(httpx.TransportError):
        httpx.post(
            victim.url + path,
            json={"at_seq": head},
            headers={**victim.headers, "Idempotency-Key": new},
            timeout=60,
        )
    wait_for(signalled(victim.proc, signal.SIGKILL), 60, what=f"api SIGKILLed at {point}")

    if point is FaultPoint.BEFORE_FORK:
        assert _rows(chaos.database_url, chaos.tenant, new) == {
            "sessions": 0,
            "turns": 0,
            "events": 0,
        }
        with pytest.raises(NotFound):
            chaos.store.reads.get_session(chaos.tenant, new)
    else:
        # one transaction: the whole fork landed
        assert _journal(chaos, new) == source
        assert chaos.store.forks.forked_from(chaos.tenant, new) == (sid, head)

    api = chaos.api()
    again = httpx.post(
        api.url + path,
        json={"at_seq": head},
        headers={**api.headers, "Idempotency-Key": new},
        timeout=60,
    )
    expected = 201 if point is FaultPoint.BEFORE_FORK else 200
    assert again.status_code == expected, again.text
    assert again.json()["session_id"] == new
    assert again.json()["forked_from"] == {"session_id": sid, "seq": head}
    assert _journal(chaos, new) == source
    assert _journal(chaos, sid) == source
    assert _rows(chaos.database_url, chaos.tenant, new)["turns"] == 2

    # the fork is a session like any other: its next turn runs at head + 1
    third = chaos.admit(new, "steps=1")
    assert chaos.store.reads.get_turn(chaos.tenant, new, third).accepted_seq == head + 1
    assert chaos.wait_terminal(new, third).state is TurnState.COMPLETED
    assert _journal(chaos, new)[:head] == source
    assert _journal(chaos, sid) == source
    # (the fork's copied tool results are the source's effects, keyed by the source)
    assert chaos.check(effects_table=False) == []
    effects_counted_once(chaos.database_url, chaos.tenant, sid)
    effects_counted_once(chaos.database_url, chaos.tenant, new, after=head)
