"""The journal over HTTP: JSON pages, cursors, and SSE that never gaps or repeats."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import redis

from tests.integration.api_server import Api, SseFrame, Stepper, admit, parse_sse, serve_api
from turnkeep.store.channel import Publisher
from turnkeep.store.facade import Store
from turnkeep.store.keys import events_channel

SSE = {"Accept": "text/event-stream"}
JSON = {"Accept": "application/json"}


@pytest.fixture(scope="module")
def api(service_env: dict[str, str]) -> Iterator[Api]:
    with serve_api(service_env, sse_heartbeat=0.3) as handle:
        yield handle


@pytest.fixture
def publisher(redis_url: str) -> Iterator[Publisher]:
    client = redis.Redis.from_url(redis_url)
    yield Publisher(client)
    client.close()


def journal(api: Api, store: Store, publisher: Publisher | None, sid: str, n: int) -> Stepper:
    """A session whose first turn has ``n`` events: accepted, started, then steps."""
    assert admit(api.client(), sid, "t1").status_code == 202
    stepper = Stepper(store, publisher, api.tenant_a, sid, "t1")
    stepper.start()
    for i in range(n - 2):
        if i % 2 == 0:
            stepper.model(
                f"thinking {i}", [{"id": f"c{i}", "name": "weather", "arguments": {"city": "Oslo"}}]
            )
        else:
            stepper.tool(f"c{i - 1}", f"sunny {i}")
    return stepper


def committed(store: Store, tenant: str, sid: str, after: int) -> list[dict[str, Any]]:
    events, _ = store.reads.list_events(tenant, sid, after=after, limit=10_000)
    return [json.loads(json.dumps(e.to_json())) for e in events]


def test_json_page(api: Api, store: Store, sid: str) -> None:
    journal(api, store, None, sid, 12)
    c = api.client()
    r = c.get(f"/v1/sessions/{sid}/events?after=3&limit=4", headers=JSON)
    assert r.status_code == 200 and r.headers["content-type"] == "application/json"
    page = r.json()
    assert [e["seq"] for e in page["events"]] == [4, 5, 6, 7]
    assert page["head_seq"] == 12 and page["next_after"] == 7
    assert page["events"] == committed(store, api.tenant_a, sid, 3)[:4]
    assert set(page["events"][0]) == {
        "seq",
        "session_id",
        "turn_id",
        "type",
        "step",
        "data",
        "created_at",
    }
    r = c.get(f"/v1/sessions/{sid}/events?after=7", headers=JSON)
    assert [e["seq"] for e in r.json()["events"]] == [8, 9, 10, 11, 12]
    r = c.get(f"/v1/sessions/{sid}/events?after=12", headers=JSON)
    assert r.json() == {"events": [], "head_seq": 12, "earliest_seq": 1, "next_after": 12}
    # Last-Event-ID works for the JSON page too, and wins over ?after=
    r = c.get(f"/v1/sessions/{sid}/events?after=0&limit=1", headers={**JSON, "Last-Event-ID": "10"})
    assert [e["seq"] for e in r.json()["events"]] == [11]
    for bad in ("0", "1001", "x"):
        r = c.get(f"/v1/sessions/{sid}/events?limit={bad}", headers=JSON)
        assert r.status_code == 422 and r.json()["code"] == "validation_error"
        assert "query.limit" in r.json()["detail"]


@pytest.mark.parametrize("accept", [SSE, JSON])
def test_future_cursor_is_409_and_malformed_is_400(
    api: Api, store: Store, sid: str, accept: dict[str, str]
) -> None:
    journal(api, store, None, sid, 4)
    c = api.client()
    r = c.get(f"/v1/sessions/{sid}/events?after=5", headers=accept)
    assert r.status_code == 409
    body = r.json()
    assert body["code"] == "cursor_ahead" and body["head_seq"] == 4
    r = c.get(f"/v1/sessions/{sid}/events", headers={**accept, "Last-Event-ID": "99"})
    assert r.status_code == 409 and r.json()["head_seq"] == 4
    for query, headers in [
        ("?after=abc", {}),
        ("?after=-1", {}),
        ("?after=1.5", {}),
        ("", {"Last-Event-ID": "x"}),
        ("?after=1", {"Last-Event-ID": ""}),
    ]:
        r = c.get(f"/v1/sessions/{sid}/events{query}", headers={**accept, **headers})
        assert r.status_code == 400, (query, headers, r.text)
        assert r.json()["code"] == "invalid_cursor"


class SseReader(threading.Thread):
    """Reads an SSE stream until it has seen ``target`` (set later) or times out."""

    def __init__(self, api: Api, path: str, headers: dict[str, str]) -> None:
        super().__init__(daemon=True)
        self.api, self.path, self.headers = api, path, headers
        self.frames: list[SseFrame] = []
        self.heartbeats = 0
        self.target: int | None = None
        self.first = threading.Event()
        self.error: BaseException | None = None
        self.status = 0

    def run(self) -> None:
        try:
            timeout = httpx.Timeout(10, read=10)
            with (
                httpx.Client(base_url=self.api.url, timeout=timeout) as c,
                c.stream(
                    "GET",
                    self.path,
                    headers={**self.headers, "Authorization": f"Bearer {self.api.token_a}"},
                ) as r,
            ):
                self.status = r.status_code
                assert r.headers["content-type"].startswith("text/event-stream")
                for frame in parse_sse(r.iter_lines()):
                    if frame is None:
                        self.heartbeats += 1
                    else:
                        self.frames.append(frame)
                        self.first.set()
                    ids = [f.id for f in self.frames if f.id is not None]
                    if self.target is not None and ids and ids[-1] >= self.target:
                        return
        except BaseException as exc:
            self.error = exc
        finally:
            self.first.set()

    def finish(self, target: int, timeout: float = 60) -> None:
        self.target = target
        self.join(timeout)
        assert not self.is_alive(), "the SSE reader did not reach the head"
        assert self.error is None, repr(self.error)

    @property
    def ids(self) -> list[int]:
        return [f.id for f in self.frames if f.id is not None]


def test_sse_resume_mid_journal_while_events_commit(
    api: Api, store: Store, publisher: Publisher, sid: str
) -> None:
    """Replay from seq 15 while another thread commits 80 more events (some publishes
    dropped on purpose, the last one too) and admits turns in the same session."""
    stepper = journal(api, store, publisher, sid, 30)
    reader = SseReader(api, f"/v1/sessions/{sid}/events?after=15", SSE)
    reader.start()
    assert reader.first.wait(60) and reader.error is None
    deltas_sent = 0
    admitter = api.client()
    for i in range(80):
        drop = i % 5 == 2 or i == 79
        if i % 2 == 0:
            stepper.model(f"live {i}", publish=not drop)
        else:
            stepper.tool(f"c{i}", f"result {i}", publish=not drop)
        if i % 7 == 0:
            publisher.delta(api.tenant_a, sid, "t1", stepper.step_no + 1, f"tok{i}")
            deltas_sent += 1
        if i % 20 == 10:
            assert admit(admitter, sid, f"more-{i}").status_code == 202
        time.sleep(0.002)
    head = store.reads.get_session(api.tenant_a, sid).head_seq
    assert head == 30 + 80 + 4
    reader.finish(head)
    assert reader.status == 200
    assert reader.ids == list(range(16, head + 1))  # no gap, no duplicate
    events = [f for f in reader.frames if f.id is not None]
    assert [f.data for f in events] == committed(store, api.tenant_a, sid, 15)
    assert all(f.event == f.data["type"] for f in events)
    deltas = [f for f in reader.frames if f.event == "model.delta"]
    assert len(deltas) == deltas_sent
    assert all(f.id is None and f.data["turn_id"] == "t1" for f in deltas)
    assert deltas[0].data["text"] == "tok0"


@pytest.mark.parametrize(
    ("query", "headers"),
    [("?after=5", {}), ("", {"Last-Event-ID": "5"}), ("?after=0", {"Last-Event-ID": "5"})],
)
def test_sse_cursor_from_header_or_query(
    api: Api, store: Store, sid: str, query: str, headers: dict[str, str]
) -> None:
    journal(api, store, None, sid, 9)
    reader = SseReader(api, f"/v1/sessions/{sid}/events{query}", {**SSE, **headers})
    reader.start()
    reader.finish(9)
    assert reader.ids == [6, 7, 8, 9]


def test_sse_from_the_start_and_a_lost_publish_is_filled_by_the_heartbeat(
    api: Api, store: Store, publisher: Publisher, sid: str
) -> None:
    stepper = journal(api, store, publisher, sid, 3)
    reader = SseReader(api, f"/v1/sessions/{sid}/events", SSE)
    reader.start()
    assert reader.first.wait(60)
    stepper.complete({"answer": "sunny"}, publish=False)
    reader.finish(4, timeout=60)  # a heartbeat (0.3 s) re-reads it; else nothing would
    assert reader.ids == [1, 2, 3, 4]
    assert reader.frames[-1].event == "turn.completed"
    assert reader.heartbeats >= 1


def test_sse_client_disconnect_ends_the_subscription(
    api: Api, store: Store, redis_url: str, sid: str
) -> None:
    journal(api, store, None, sid, 3)
    channel = events_channel(api.tenant_a, sid)
    client = redis.Redis.from_url(redis_url)
    try:
        reader = SseReader(api, f"/v1/sessions/{sid}/events?after=1", SSE)
        reader.start()
        reader.finish(2)
        deadline = time.monotonic() + 5
        subscribers = -1
        while time.monotonic() < deadline:
            subscribers = dict(client.pubsub_numsub(channel))[channel.encode()]
            if subscribers == 0:
                break
            time.sleep(0.05)
        assert subscribers == 0
    finally:
        client.close()
