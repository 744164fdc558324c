"""Sessions, turns (with the long poll), cancellation and the transcript over HTTP."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import httpx
import pytest
import redis

from tests.integration.api_server import Api, Stepper, admit, serve_api
from tests.procs import wait_for
from turnkeep.api.service import reads
from turnkeep.store.channel import Publisher
from turnkeep.store.facade import Store
from turnkeep.store.keys import events_channel

#: the long polls' wait: far beyond what answering may take on a loaded machine
#: (``PROMPT``), so an answer within ``PROMPT`` did not come from the wait running out
WAIT = 60
PROMPT = 20.0


@pytest.fixture(scope="module")
def api(service_env: dict[str, str]) -> Iterator[Api]:
    with serve_api(service_env, max_wait=float(WAIT)) as handle:
        yield handle


@pytest.fixture
def publisher(redis_url: str) -> Iterator[Publisher]:
    client = redis.Redis.from_url(redis_url)
    yield Publisher(client)
    client.close()


def test_session_summary_follows_the_lane(api: Api, store: Store, sid: str) -> None:
    c = api.client()
    assert c.get(f"/v1/sessions/{sid}").status_code == 404
    admit(c, sid, "t1")
    admit(c, sid, "t2")
    s = c.get(f"/v1/sessions/{sid}").json()
    assert set(s) == {
        "session_id",
        "agent",
        "head_seq",
        "state",
        "active_turn",
        "created_at",
        "updated_at",
        "project",
        "usage",
        "expires_after",
        "expires_at",
        "metadata",
    }
    assert (s["session_id"], s["agent"], s["head_seq"]) == (sid, "demo", 2)
    assert (s["expires_after"], s["expires_at"]) == (None, None)  # no TTL: never
    assert (s["state"], s["active_turn"]) == ("queued", "t1")
    stepper = Stepper(store, None, api.tenant_a, sid, "t1")
    stepper.start()
    assert c.get(f"/v1/sessions/{sid}").json()["state"] == "running"
    stepper.complete({"answer": "done"})
    s = c.get(f"/v1/sessions/{sid}").json()
    assert (s["state"], s["active_turn"], s["head_seq"]) == ("queued", "t2", 4)
    t1 = c.get(f"/v1/sessions/{sid}/turns/t1").json()
    assert (t1["state"], t1["attempt"], t1["result"]) == ("completed", 1, {"answer": "done"})


def _client(api: Api) -> httpx.Client:
    """Tenant a's client, waiting longer than any long poll for its answer."""
    c = api.client()
    c.timeout = httpx.Timeout(WAIT + 30)
    return c


def _long_poll(api: Api, path: str, out: dict[str, object]) -> threading.Thread:
    def run() -> None:
        started = time.monotonic()
        with _client(api) as c:
            out["response"] = c.get(path)
        out["elapsed"] = time.monotonic() - started

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t


@pytest.mark.parametrize("publish", [True, False])
def test_wait_returns_when_the_turn_ends(
    api: Api,
    store: Store,
    publisher: Publisher,
    sid: str,
    publish: bool,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if publish:
        # the re-read far off too: only the published end can answer within PROMPT
        monkeypatch.setattr(reads, "REREAD", 30.0)
    assert admit(api.client(), sid, "t1").status_code == 202
    out: dict[str, object] = {}
    poll = _long_poll(api, f"/v1/sessions/{sid}/turns/t1?wait={WAIT}", out)
    # the poll subscribes to the session's channel, then reads the turn
    channel = events_channel(api.tenant_a, sid)
    wait_for(
        lambda: dict(publisher.client.pubsub_numsub(channel))[channel.encode()] == 1,
        60,
        interval=0.02,
        what="the long poll subscribed",
    )
    stepper = Stepper(store, publisher, api.tenant_a, sid, "t1")
    stepper.start(publish=publish)
    time.sleep(0.3)  # a chance to answer, wrongly, on an event that is not the end
    assert poll.is_alive()  # running is not terminal
    ended = time.monotonic()
    stepper.complete({"answer": "sunny"}, publish=publish)
    poll.join(WAIT + 30)
    assert not poll.is_alive()
    r = out["response"]
    assert isinstance(r, httpx.Response) and r.status_code == 200
    assert r.json()["state"] == "completed" and r.json()["result"] == {"answer": "sunny"}
    latency = time.monotonic() - ended
    # published: woken by the publish (the re-read is 30 s off); lost publish: found by
    # the one-second re-read; either way long before the 60 s wait ran out
    assert latency < PROMPT, latency


def test_wait_times_out_with_the_current_turn(api: Api, sid: str) -> None:
    c = _client(api)
    admit(c, sid, "t1")
    started = time.monotonic()
    r = c.get(f"/v1/sessions/{sid}/turns/t1?wait=1.2")
    elapsed = time.monotonic() - started
    assert r.status_code == 200 and r.json()["state"] == "queued"
    assert 1.1 < elapsed < 1.2 + PROMPT, elapsed


def test_wait_on_a_terminal_turn_answers_at_once(api: Api, store: Store, sid: str) -> None:
    c = _client(api)
    admit(c, sid, "t1")
    stepper = Stepper(store, None, api.tenant_a, sid, "t1")
    stepper.start()
    stepper.complete({"answer": "x"})
    started = time.monotonic()
    assert c.get(f"/v1/sessions/{sid}/turns/t1?wait={WAIT}").json()["state"] == "completed"
    assert time.monotonic() - started < PROMPT  # not at the wait's end


@pytest.mark.parametrize("wait", ["0", "-1", f"{WAIT}.5", "abc", "nan"])
def test_wait_out_of_range_is_422(api: Api, sid: str, wait: str) -> None:
    c = api.client()
    admit(c, sid, "t1")
    r = c.get(f"/v1/sessions/{sid}/turns/t1?wait={wait}")
    assert r.status_code == 422, r.text
    assert r.json()["code"] == "validation_error" and "query.wait" in r.json()["detail"]


def test_cancel_settles_a_queued_turn_at_once(api: Api, store: Store, sid: str) -> None:
    # no worker steps a queued turn: the API's own statement cancels it
    c = api.client()
    admit(c, sid, "t1")
    r = c.post(f"/v1/sessions/{sid}/turns/t1/cancel")
    assert r.status_code == 202
    assert r.json()["cancel_requested"] is True and r.json()["state"] == "cancelled"
    again = c.post(f"/v1/sessions/{sid}/turns/t1/cancel")
    assert again.status_code == 409 and again.json()["code"] == "turn_not_active"
    events = store.reads.turn_events(api.tenant_a, sid, "t1")
    assert [e.type for e in events] == ["turn.accepted", "turn.cancel_requested", "turn.cancelled"]
    assert events[1].data == {"by": "alice"} and events[2].seq == events[1].seq + 1
    assert c.post(f"/v1/sessions/{sid}/turns/nope/cancel").status_code == 404


def test_cancel_of_a_running_turn_is_a_request(api: Api, store: Store, sid: str) -> None:
    c = api.client()
    admit(c, sid, "t1")
    Stepper(store, None, api.tenant_a, sid, "t1").start()
    r = c.post(f"/v1/sessions/{sid}/turns/t1/cancel")
    assert r.status_code == 202
    assert r.json()["cancel_requested"] is True and r.json()["state"] == "running"
    again = c.post(f"/v1/sessions/{sid}/turns/t1/cancel")
    assert again.status_code == 202 and again.json() == r.json()
    types = [e.type for e in store.reads.turn_events(api.tenant_a, sid, "t1")]
    assert types == ["turn.accepted", "turn.started", "turn.cancel_requested"]


def test_cancel_of_an_ended_turn_is_409(api: Api, store: Store, sid: str) -> None:
    c = api.client()
    admit(c, sid, "t1")
    stepper = Stepper(store, None, api.tenant_a, sid, "t1")
    stepper.start()
    stepper.complete({"answer": "x"})
    r = c.post(f"/v1/sessions/{sid}/turns/t1/cancel")
    assert r.status_code == 409 and r.json()["code"] == "turn_not_active"


def test_messages_rebuild_the_transcript(api: Api, store: Store, sid: str) -> None:
    c = api.client()
    body = {
        "agent": "demo",
        "input": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Weather in Oslo?"},
        ],
    }
    assert (
        c.post(
            f"/v1/sessions/{sid}/turns", json=body, headers={"Idempotency-Key": "t1"}
        ).status_code
        == 202
    )
    stepper = Stepper(store, None, api.tenant_a, sid, "t1")
    stepper.start()
    call = {"id": "c1", "name": "weather", "arguments": {"city": "Oslo"}}
    stepper.model("", [call])
    stepper.tool("c1", "12 C, rain")
    stepper.model("Rainy, 12 C.")
    stepper.complete({"text": "Rainy, 12 C."})
    admit(c, sid, "t2", text="And tomorrow?")
    r = c.get(f"/v1/sessions/{sid}/messages")
    assert r.status_code == 200
    assert r.json()["messages"] == [
        {"role": "system", "content": "Be brief.", "turn_id": "t1", "seq": 1},
        {"role": "user", "content": "Weather in Oslo?", "turn_id": "t1", "seq": 1},
        {"role": "assistant", "content": "", "tool_calls": [call], "turn_id": "t1", "seq": 3},
        {
            "role": "tool",
            "content": "12 C, rain",
            "tool_call_id": "c1",
            "name": "weather",
            "turn_id": "t1",
            "seq": 4,
        },
        {"role": "assistant", "content": "Rainy, 12 C.", "turn_id": "t1", "seq": 5},
        {"role": "user", "content": "And tomorrow?", "turn_id": "t2", "seq": 7},
    ]
