"""Workflow nodes end to end: the real API, real worker and beat processes, and a local
webhook receiver. A node's ids are stable (a retried node is the same turn), its state
follows the turn, its completion arrives as a signed webhook from the outbox, retried
until acknowledged; browsers follow a session with a short-lived stream token."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.integration.api_server import Api, parse_sse, serve_api
from tests.procs import wait_for
from tests.webhook_receiver import Receiver
from turnkeep.api.auth import Principal
from turnkeep.api.stream_tokens import StreamTokens
from turnkeep.runtime import webhooks

SECRET = "whsec-" + uuid.uuid4().hex
#: quick retries and passes, so a failing receiver's three attempts take a second or two
DELIVERY_ENV = {
    "TURNKEEP_WEBHOOK_SECRET": SECRET,
    # the receiver listens on 127.0.0.1: a deployment refuses that unless it allows it
    "TURNKEEP_WEBHOOK_ALLOW_PRIVATE": "1",
    "TURNKEEP_WEBHOOK_INTERVAL": "0.5",
    "TURNKEEP_WEBHOOK_BACKOFF": "0.3",
    "TURNKEEP_WEBHOOK_TIMEOUT": "2",
}


@pytest.fixture(scope="module")
def api(service_env: dict[str, str]) -> Iterator[Api]:
    # the worker processes' broker and agents, so the API's enqueues reach them
    with serve_api(
        service_env,
        agents="tests.agents",
        broker_url=service_env["TURNKEEP_REDIS_URL"],
        webhook_secret=SECRET,
        # the receivers listen on 127.0.0.1, refused at admission unless allowed
        # (tests/integration/test_callback_admission.py); the workers' own setting is
        # DELIVERY_ENV's
        webhook_allow_private=True,
        max_wait=60.0,  # a long poll far longer than a turn, even on a loaded machine
    ) as handle:
        yield handle


@pytest.fixture
def run_id() -> str:
    # a workflow engine's own run id, as it looks (hashed into the node's ids)
    return f"manual__2026-12-01T10:00:00+00:00-{uuid.uuid4().hex[:6]}"


def _node(run_id: str, node_id: str) -> str:
    return f"/v1/workflows/{run_id}/nodes/{node_id}"


def _start(c: httpx.Client, run_id: str, node_id: str, agent: str, text: str = "go", **extra: Any):
    body = {"agent": agent, "input": [{"role": "user", "content": text}], **extra}
    return c.post(_node(run_id, node_id) + "/turns", json=body)


def _until(c: httpx.Client, run_id: str, node_id: str, state: str, timeout: float = 90) -> dict:
    def get() -> dict | None:
        n = c.get(_node(run_id, node_id)).json()
        return n if n["state"] == state else None

    return wait_for(get, timeout, what=f"node {state}")


def _done(c: httpx.Client, run_id: str, node_id: str) -> dict:
    for _ in range(6):  # long polls of up to 10 s each
        n = c.get(_node(run_id, node_id) + "?wait=10").json()
        if n["state"] == "done":
            return n
    raise AssertionError(f"node did not finish: {n}")


def _delivered(c: httpx.Client, run_id: str, node_id: str, timeout: float = 90) -> dict:
    def get() -> dict | None:
        n = c.get(_node(run_id, node_id)).json()
        return n if (n["webhook"] or {}).get("status") == "delivered" else None

    return wait_for(get, timeout, what="webhook delivered")


def _expected_body(node: dict) -> bytes:
    return webhooks.body(
        delivery_id=node["webhook"]["delivery_id"],
        run_id=node["run_id"],
        node_id=node["node_id"],
        session_id=node["session_id"],
        turn_id=node["turn_id"],
        state=node["turn_state"],
        result=node["result"],
        error=node["error"],
    )


# -- admission: stable ids, replay, conflicts ---------------------------------------------


def test_a_retried_node_is_the_same_turn_and_other_input_is_409(api: Api, run_id: str) -> None:
    c = api.client()
    first = _start(c, run_id, "extract", "demo", "Weather in Paris?")
    assert first.status_code == 202, first.text
    node = first.json()
    assert (node["run_id"], node["node_id"], node["state"]) == (run_id, "extract", "running")
    assert node["turn_state"] == "queued" and node["webhook"] is None
    assert node["session_id"].startswith("wf-") and node["turn_id"].startswith("node-")
    assert first.headers["location"].endswith("/nodes/extract")
    # the workflow engine retries the node: same turn, 200
    again = _start(c, run_id, "extract", "demo", "Weather in Paris?")
    assert again.status_code == 200, again.text
    assert (again.json()["session_id"], again.json()["turn_id"]) == (
        node["session_id"],
        node["turn_id"],
    )
    # other input, another agent, another callback: the same node, refused
    for r in (
        _start(c, run_id, "extract", "demo", "Weather in Rome?"),
        _start(c, run_id, "extract", "counter", "Weather in Paris?"),
        _start(c, run_id, "extract", "demo", "Weather in Paris?", callback_url="http://h/x"),
    ):
        assert r.status_code == 409 and r.json()["code"] == "idempotency_conflict", r.text
    # another node of the run, another run's node of the same name: other turns
    other = _start(c, run_id, "load", "demo").json()
    rerun = _start(c, run_id + "-2", "extract", "demo", "Weather in Paris?").json()
    ids = {node["session_id"], other["session_id"], rerun["session_id"]}
    assert len(ids) == 3
    # the node's session is an ordinary one
    turn = c.get(f"/v1/sessions/{node['session_id']}/turns/{node['turn_id']}")
    assert turn.status_code == 200 and turn.json()["state"] in ("queued", "running", "completed")


def test_tenant_b_cannot_read_tenant_as_node(api: Api, run_id: str) -> None:
    a, b = api.client(), api.client("b")
    node = _start(a, run_id, "n1", "demo").json()
    r = b.get(_node(run_id, "n1"))
    assert r.status_code == 404 and r.json()["code"] == "not_found"
    assert b.get(f"/v1/sessions/{node['session_id']}/turns/{node['turn_id']}").status_code == 404
    # the same run and node names in tenant b are tenant b's own node
    mine = _start(b, run_id, "n1", "demo", "something else")
    assert mine.status_code == 202 and mine.json()["session_id"] != node["session_id"]
    assert a.get(_node(run_id, "n1")).json()["turn_id"] == node["turn_id"]


def test_callback_urls_are_http_only_and_need_a_secret(
    api: Api, run_id: str, service_env: dict[str, str]
) -> None:
    c = api.client()
    for url in ("ftp://h/x", "file:///etc/passwd", "not a url", "https://user:pw@h/x"):
        r = _start(c, run_id, "n", "demo", callback_url=url)
        assert r.status_code == 422 and r.json()["code"] == "validation_error", url
    assert _start(c, run_id, "n", "demo", multitask="interrupt").status_code == 422
    with serve_api(service_env, agents="tests.agents", webhook_secret="") as bare:
        r = _start(bare.client(), run_id, "n", "demo", callback_url="https://h/x")
        assert r.status_code == 400 and r.json()["code"] == "webhook_not_configured"
        assert bare.client().get(_node(run_id, "n")).status_code == 404  # nothing admitted
        # without a callback the node needs no secret
        assert _start(bare.client(), run_id, "n", "demo").status_code == 202


# -- the node follows its turn; the webhook -------------------------------------------------


def test_node_waits_for_a_person_then_finishes_and_the_signed_webhook_arrives(
    api: Api, procs: Any, run_id: str
) -> None:
    procs.worker(DELIVERY_ENV)
    c = api.client()
    with Receiver() as rx:
        r = _start(c, run_id, "approve", "banker", callback_url=rx.url)
        assert r.status_code == 202, r.text
        assert r.json()["webhook"]["status"] == "pending"
        waiting = _until(c, run_id, "approve", "waiting")
        pending = waiting["pending_input"]
        assert waiting["turn_state"] == "waiting"
        assert (pending["kind"], pending["tool"]["name"]) == ("approval", "transfer")
        # a long poll of a node nobody answers holds for its wait, then says waiting
        t0 = time.monotonic()
        polled = c.get(_node(run_id, "approve") + "?wait=1").json()
        assert polled["state"] == "waiting" and time.monotonic() - t0 >= 0.9
        assert rx.deliveries() == []  # not before the turn settled
        sid, tid = waiting["session_id"], waiting["turn_id"]
        answer = c.post(
            f"/v1/sessions/{sid}/turns/{tid}/inputs/{pending['request_id']}",
            json={"approved": True},
        )
        assert answer.status_code == 200, answer.text
        done = _done(c, run_id, "approve")
        assert done["turn_state"] == "completed" and done["result"]["text"].startswith("ok: ")
        assert done["pending_input"] is None and done["error"] is None
        node = _delivered(c, run_id, "approve")
        got = rx.deliveries()
    assert len(got) == 1
    hook = got[0]
    assert hook.body == _expected_body(node)  # exactly these bytes were signed and sent
    assert json.loads(hook.body) == {
        "delivery_id": node["webhook"]["delivery_id"],
        "run_id": run_id,
        "node_id": "approve",
        "session_id": sid,
        "turn_id": tid,
        "state": "completed",
        "result": done["result"],
        "error": None,
    }
    # (the envelope names no tenant; the banker's own result text carries its tool's
    # idempotency key, tenant included, as the turn's result anywhere does)
    assert hook.headers["turnkeep-delivery"] == node["webhook"]["delivery_id"]
    assert hook.headers["content-type"] == "application/json"
    assert webhooks.verify(SECRET, hook.body, hook.headers["turnkeep-signature"])
    assert not webhooks.verify("another-secret", hook.body, hook.headers["turnkeep-signature"])
    assert node["webhook"]["attempts"] == 1 and node["webhook"]["last_status"] == 200


def test_long_poll_answers_as_soon_as_the_node_is_done(api: Api, procs: Any, run_id: str) -> None:
    procs.worker(DELIVERY_ENV)
    c = api.client()
    c.timeout = httpx.Timeout(90)  # past the poll's 60 s
    assert _start(c, run_id, "count", "counter", "steps=2").status_code == 202
    t0 = time.monotonic()
    node = c.get(_node(run_id, "count") + "?wait=60").json()
    assert node["state"] == "done", node
    # the turn's second or two, long before the wait ran out, even on a loaded machine
    assert time.monotonic() - t0 < 40
    assert node["result"] == {"text": "done after 2 calls, 0 errors"}
    bad = c.get(_node(run_id, "count") + "?wait=0")
    assert bad.status_code == 422


def test_a_failing_receiver_gets_the_same_delivery_until_it_acknowledges(
    api: Api, procs: Any, run_id: str
) -> None:
    procs.worker(DELIVERY_ENV)
    procs.beat(DELIVERY_ENV)  # retries come from beat's passes
    c = api.client()
    with Receiver(["500", "cut", "503"]) as rx:
        r = _start(c, run_id, "flaky", "counter", "steps=1", callback_url=rx.url)
        assert r.status_code == 202, r.text
        node = _delivered(c, run_id, "flaky", timeout=60)
        got = rx.deliveries()
        time.sleep(1.5)  # a few more passes: nothing more is sent once acknowledged
        assert rx.deliveries() == got
    assert [h.answered for h in got] == ["500", "cut", "503", "200"]
    assert {h.headers["turnkeep-delivery"] for h in got} == {node["webhook"]["delivery_id"]}
    assert {h.body for h in got} == {_expected_body(node)}
    assert all(webhooks.verify(SECRET, h.body, h.headers["turnkeep-signature"]) for h in got)
    wh = node["webhook"]
    assert (wh["attempts"], wh["last_status"], wh["last_error"]) == (4, 200, None)
    assert wh["delivered_at"] is not None and wh["next_attempt_at"] is None


def test_any_turn_may_name_a_callback_and_gets_the_signed_webhook(
    api: Api, procs: Any, sid: str
) -> None:
    """Not only workflow nodes (issue 27): a turn admitted with a ``callback_url`` is
    POSTed, signed, once it settles; its body names no run or node; a replay naming
    another URL is a conflict, the same one the stored turn."""
    procs.worker(DELIVERY_ENV)
    c = api.client()
    with Receiver(["200"]) as rx:
        body = {
            "agent": "counter",
            "input": [{"role": "user", "content": "steps=1"}],
            "callback_url": rx.url,
        }
        headers = {"Idempotency-Key": f"{sid}-cb"}
        r = c.post(f"/v1/sessions/{sid}/turns", json=body, headers=headers)
        assert r.status_code == 202, r.text
        again = c.post(f"/v1/sessions/{sid}/turns", json=body, headers=headers)
        assert again.status_code == 200 and again.json()["turn_id"] == f"{sid}-cb"
        other = {**body, "callback_url": rx.url + "/other"}
        r = c.post(f"/v1/sessions/{sid}/turns", json=other, headers=headers)
        assert r.status_code == 409 and r.json()["code"] == "idempotency_conflict", r.text
        [got] = wait_for(lambda: rx.deliveries() or None, 60, what="the turn's webhook")
    sent = json.loads(got.body)
    assert (sent["run_id"], sent["node_id"]) == (None, None)
    assert (sent["session_id"], sent["turn_id"], sent["state"]) == (sid, f"{sid}-cb", "completed")
    assert webhooks.verify(SECRET, got.body, got.headers["turnkeep-signature"])
    turn = c.get(f"/v1/sessions/{sid}/turns/{sid}-cb").json()
    assert sent["result"] == turn["result"]


def test_a_callback_to_a_private_address_is_never_sent_unless_allowed(
    api: Api, procs: Any, run_id: str
) -> None:
    env = {k: v for k, v in DELIVERY_ENV.items() if k != "TURNKEEP_WEBHOOK_ALLOW_PRIVATE"}
    procs.worker(env)
    c = api.client()
    with Receiver([]) as rx:
        r = _start(c, run_id, "private", "counter", "steps=1", callback_url=rx.url)
        assert r.status_code == 202, r.text

        def refused() -> dict[str, Any] | None:
            node = c.get(f"/v1/workflows/{run_id}/nodes/private").json()
            wh = node.get("webhook") or {}
            return node if wh.get("last_error") == "private_address" else None

        node = wait_for(refused, 30, what="the attempt refused as private")
        assert rx.deliveries() == []
    assert node["webhook"]["delivered_at"] is None and node["webhook"]["attempts"] >= 1


def test_a_cancelled_node_is_delivered_too(api: Api, procs: Any, run_id: str) -> None:
    # settled by the API's own statement, not a worker: beat's pass finds it
    procs.worker(DELIVERY_ENV)
    procs.beat(DELIVERY_ENV)
    c = api.client()
    with Receiver() as rx:
        _start(c, run_id, "stop", "banker", callback_url=rx.url)
        node = _until(c, run_id, "stop", "waiting")
        r = c.post(f"/v1/sessions/{node['session_id']}/turns/{node['turn_id']}/cancel")
        assert r.status_code == 202 and r.json()["state"] == "cancelled"
        node = _delivered(c, run_id, "stop")
        got = rx.deliveries()
    assert len(got) == 1 and json.loads(got[0].body)["state"] == "cancelled"
    assert node["state"] == "done" and node["turn_state"] == "cancelled"


# -- stream tokens -------------------------------------------------------------------------


def _admit(c: httpx.Client, sid: str) -> None:
    body = {"agent": "demo", "input": [{"role": "user", "content": "hi"}]}
    assert c.post(f"/v1/sessions/{sid}/turns", json=body).status_code == 202


def _sse_first(url: str, path: str) -> list[str]:
    """The event types of the stream's first frames, read until turn.accepted."""
    seen: list[str] = []
    with (
        httpx.Client(base_url=url, timeout=10) as anon,
        anon.stream("GET", path, headers={"Accept": "text/event-stream"}) as r,
    ):
        assert r.status_code == 200, r.read()
        for frame in parse_sse(r.iter_lines()):
            if frame is not None:
                seen.append(frame.event)
                if frame.event == "turn.accepted":
                    break
    return seen


def test_stream_tokens_follow_one_session_without_the_bearer_token(api: Api, sid: str) -> None:
    c = api.client()
    _admit(c, sid)
    issued = c.post(f"/v1/sessions/{sid}/stream-tokens")
    assert issued.status_code == 200, issued.text
    token, expires = issued.json()["token"], issued.json()["expires_at"]
    assert api.token_a not in token
    from datetime import datetime

    left = datetime.fromisoformat(expires).timestamp() - time.time()
    assert 0 < left <= 600
    # an EventSource: no header, the token in the URL
    assert _sse_first(api.url, f"/v1/sessions/{sid}/events?stream_token={token}") == [
        "turn.accepted"
    ]
    anon = httpx.Client(base_url=api.url, timeout=10)
    api.clients.append(anon)
    page = anon.get(
        f"/v1/sessions/{sid}/events?after=0&stream_token={token}",
        headers={"Accept": "application/json"},
    )
    assert page.status_code == 200 and page.json()["events"][0]["type"] == "turn.accepted"

    def refused(path: str) -> None:
        r = anon.get(path, headers={"Accept": "application/json"})
        assert r.status_code == 401 and r.json()["code"] == "unauthorized", (path, r.text)

    # the token opens nothing but this session's events
    other = f"s-{uuid.uuid4().hex[:8]}"
    _admit(c, other)
    refused(f"/v1/sessions/{other}/events?stream_token={token}")
    refused(f"/v1/sessions/{sid}?stream_token={token}")
    refused(f"/v1/sessions/{sid}/messages?stream_token={token}")
    assert anon.post(f"/v1/sessions/{sid}/stream-tokens?stream_token={token}").status_code == 401
    # expired and tampered
    st = StreamTokens.from_settings(api.settings)
    alice = Principal(tenant=api.tenant_a, subject="alice")
    old, _ = st.issue(alice, sid, now=time.time() - 700)
    refused(f"/v1/sessions/{sid}/events?stream_token={old}")
    head, payload, mac = token.split(".")
    refused(f"/v1/sessions/{sid}/events?stream_token={head}.{payload}.{mac[::-1]}")
    refused(f"/v1/sessions/{sid}/events?stream_token={head}.{payload[:-2]}.{mac}")
    # the long-lived bearer token is never accepted in a URL, under any name
    for name in ("stream_token", "token", "access_token", "authorization"):
        refused(f"/v1/sessions/{sid}/events?{name}={api.token_a}")
    refused(f"/v1/sessions/{sid}/events?stream_token=Bearer%20{api.token_a}")


def test_a_stream_token_is_issued_only_for_a_session_of_the_callers_tenant(
    api: Api, sid: str
) -> None:
    _admit(api.client(), sid)
    r = api.client("b").post(f"/v1/sessions/{sid}/stream-tokens")
    assert r.status_code == 404 and r.json()["code"] == "not_found"
    missing = api.client().post(f"/v1/sessions/s-{uuid.uuid4().hex[:8]}/stream-tokens")
    assert missing.status_code == 404
    unauthenticated = httpx.post(f"{api.url}/v1/sessions/{sid}/stream-tokens", timeout=10)
    assert unauthenticated.status_code == 401
