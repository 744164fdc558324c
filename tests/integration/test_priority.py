"""A turn's priority honoured by the broker (issue 26): with one worker thread and a
backlog of low-priority sessions queued before any worker runs, the session admitted
last at priority 9 is handed out first."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from store.facade import Store
from tests.conftest import broker_or
from tests.integration.api_server import Api, admit, serve_api
from tests.procs import wait_for


@pytest.fixture(scope="module")
def api(service_env: dict[str, str]) -> Iterator[Api]:
    # the worker processes' broker and agents, so the API's enqueues reach them
    broker = broker_or(service_env["TURNKEEP_REDIS_URL"])
    with serve_api(service_env, agents="tests.agents", broker_url=broker) as handle:
        yield handle


def test_the_first_turn_handed_out_is_the_one_of_highest_priority(
    api: Api, procs, store: Store, sid: str
) -> None:
    c = api.client()
    low = [f"{sid}-low-{i}" for i in range(6)]
    for s in low:
        r = admit(c, s, priority=0)
        assert r.status_code == 202, r.text
    urgent = f"{sid}-urgent"
    r = admit(c, urgent, priority=9)
    assert r.status_code == 202, r.text
    assert admit(c, f"{sid}-bad", priority=10).status_code == 422
    procs.worker(concurrency=1)

    def started(session: str) -> object:
        turns = store.turn_page(api.tenant_a, session, limit=1)
        events = [] if not turns else store.turn_events(api.tenant_a, session, turns[0].turn_id)
        first = [e.created_at for e in events if e.type == "turn.started"]
        return first[0] if first else None

    for s in [*low, urgent]:
        wait_for(lambda s=s: started(s), 60, what=f"{s} started")
    assert started(urgent) < min(started(s) for s in low)  # type: ignore[operator]
