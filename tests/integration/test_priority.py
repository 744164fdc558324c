"""A turn's priority honoured (issue 26), on both brokers (``make test-amqp``): with
one worker thread and a backlog of 500 sessions at the default priority queued before
any worker runs, the session admitted last at priority 9 is handed out first."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.conftest import broker_or
from tests.integration.api_server import Api, admit, serve_api
from tests.procs import wait_for
from turnkeep.store.facade import Store


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
    normal = [f"{sid}-n-{i}" for i in range(500)]
    for s in normal:
        r = admit(c, s, priority=0 if s.endswith("-0") else None)
        assert r.status_code == 202, r.text
    urgent = f"{sid}-urgent"
    r = admit(c, urgent, priority=9)
    assert r.status_code == 202, r.text
    assert admit(c, f"{sid}-bad", priority=10).status_code == 422
    procs.worker(concurrency=1)

    def started(session: str) -> object:
        turns = store.reads.turn_page(api.tenant_a, session, limit=1)
        events = (
            [] if not turns else store.reads.turn_events(api.tenant_a, session, turns[0].turn_id)
        )
        first = [e.created_at for e in events if e.type == "turn.started"]
        return first[0] if first else None

    first = wait_for(lambda: started(urgent), 60, what="the urgent session started")
    wait_for(lambda: started(normal[1]), 60, what="the oldest normal session started")
    begun = [t for t in (started(s) for s in normal) if t is not None]
    assert first < min(begun)  # type: ignore[operator]
