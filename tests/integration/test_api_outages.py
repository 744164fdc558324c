"""With Redis and the broker unreachable: admission still answers 202 (the recovery
scan will enqueue), readiness says which check failed, SSE answers 503, and the long
poll falls back to re-reading Postgres."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator

import httpx
import pytest

from tests.integration.api_server import Api, admit, serve_api
from turnkeep.store.facade import Store

#: nothing listens on port 9 (the conftest points model providers there too)
DEAD_REDIS = "redis://:hunter2-not-a-real-password@127.0.0.1:9/0"
#: a long poll's wait: far longer than its answer may take
WAIT = 40
#: how often a long poll without Redis re-reads Postgres (the API's REREAD)
REREAD = 1.0


@pytest.fixture(scope="module")
def api(service_env: dict[str, str]) -> Iterator[Api]:
    with serve_api(
        service_env, redis_url=DEAD_REDIS, broker_url=DEAD_REDIS, max_wait=WAIT
    ) as handle:
        yield handle


def test_readyz_names_the_failed_check(api: Api) -> None:
    r = api.client(None).get("/readyz")
    assert r.status_code == 503
    assert r.headers["retry-after"] == "1"
    body = r.json()
    assert body["code"] == "unavailable"
    assert body["checks"] == {"postgres": "ok", "redis": "failed"}
    assert "redis" in body["detail"]


def test_admission_is_202_when_the_enqueue_fails(
    api: Api, store: Store, sid: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    prompt = "secret prompt text 7f3a"
    r = admit(api.client(), sid, "t1", text=prompt)
    assert r.status_code == 202
    assert store.reads.get_turn(api.tenant_a, sid, "t1").state.value == "queued"
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and "enqueue of run_session failed" not in caplog.text:
        time.sleep(0.05)
    assert "enqueue of run_session failed" in caplog.text
    assert "hunter2" not in caplog.text
    assert prompt not in caplog.text and api.token_a not in caplog.text


def test_sse_is_503_and_json_page_still_works(api: Api, sid: str) -> None:
    c = api.client()
    admit(c, sid, "t1")
    r = c.get(f"/v1/sessions/{sid}/events", headers={"Accept": "text/event-stream"})
    assert r.status_code == 503 and r.json()["code"] == "unavailable"
    assert r.headers["retry-after"] == "1"
    r = c.get(f"/v1/sessions/{sid}/events", headers={"Accept": "application/json"})
    assert r.status_code == 200 and r.json()["head_seq"] == 1


def test_long_poll_falls_back_to_postgres(api: Api, sid: str) -> None:
    c = api.client()
    admit(c, sid, "t1")
    started = time.monotonic()
    r = c.get(f"/v1/sessions/{sid}/turns/t1?wait=1.5")
    assert r.status_code == 200 and r.json()["state"] == "queued"
    assert 1.4 < time.monotonic() - started < 1.5 + 20  # answered at the wait's end


def test_a_long_poll_answers_a_change_at_its_next_reread_not_at_its_timeout(
    api: Api, store: Store, sid: str
) -> None:
    """With no Redis to wake it, a long poll re-reads Postgres (every REREAD): a change
    that lands while it waits is answered within a re-read or two, carrying the new
    state. An endpoint that slept out its wait would answer 40 s on, or say queued."""
    c = api.client()
    admit(c, sid, "t1")
    answer: dict[str, object] = {}

    def poll() -> None:
        answer["response"] = c.get(f"/v1/sessions/{sid}/turns/t1?wait={WAIT}", timeout=WAIT + 20)
        answer["at"] = time.monotonic()

    poller = threading.Thread(target=poll, daemon=True)
    poller.start()
    poller.join(2 * REREAD)  # past its first read: it must still be waiting
    assert poller.is_alive(), answer
    # a queued turn is settled by the cancellation's own statement, in Postgres only
    events = store.turns.request_cancel(api.tenant_a, sid, "t1", subject="tester")
    assert [e.type for e in events] == ["turn.cancel_requested", "turn.cancelled"]
    cancelled_at = time.monotonic()
    poller.join(WAIT + 20)
    r = answer["response"]
    assert isinstance(r, httpx.Response) and r.status_code == 200, answer
    assert r.json()["state"] == "cancelled"
    # because of the change: well before the timeout (a loaded machine may be slow)
    assert float(str(answer["at"])) - cancelled_at < WAIT / 4
