"""Admission over real HTTP: idempotency, conflicts, validation, limits, the enqueue."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator

import httpx
import pytest

from tests.integration.api_server import Api, admit, broker_messages, serve_api
from tests.procs import at_once
from turnkeep.store.facade import Store


@pytest.fixture(scope="module")
def api(service_env: dict[str, str]) -> Iterator[Api]:
    with serve_api(service_env) as handle:
        yield handle


def test_admission_202_then_replay_200_identical(api: Api, store: Store, sid: str) -> None:
    c = api.client()
    first = admit(c, sid, "turn-1")
    assert first.status_code == 202, first.text
    body = first.json()
    assert set(body) == {
        "session_id",
        "turn_id",
        "state",
        "agent",
        "attempt",
        "result",
        "error",
        "accepted_seq",
        "created_at",
        "updated_at",
        "cancel_requested",
        "pending_input",
        "pending_inputs",
        "usage",
        "agent_version",
        "rerun_of",
        "metadata",
    }
    assert body["agent_version"] == "1"  # the latest (and only) version of demo
    assert body["turn_id"] == "turn-1" and body["session_id"] == sid
    assert body["state"] == "queued" and body["agent"] == "demo"
    assert body["accepted_seq"] == 1 and body["cancel_requested"] is False
    assert first.headers["location"] == f"/v1/sessions/{sid}/turns/turn-1"

    again = admit(c, sid, "turn-1")
    assert again.status_code == 200
    assert again.json() == body
    assert again.content == first.content
    assert len(store.reads.list_turns(api.tenant_a, sid)) == 1
    assert [e.type for e in store.reads.turn_events(api.tenant_a, sid, "turn-1")] == [
        "turn.accepted"
    ]
    stored = store.reads.get_turn(api.tenant_a, sid, "turn-1")
    assert stored.input == {"messages": [{"role": "user", "content": "Weather in Paris?"}]}


def test_enqueue_puts_ids_only_on_the_broker(api: Api, sid: str) -> None:
    c = api.client()
    secret_text = f"prompt-{uuid.uuid4().hex}"
    assert admit(c, sid, "t1", text=secret_text).status_code == 202
    deadline = time.monotonic() + 5
    mine: list[dict[str, object]] = []
    while time.monotonic() < deadline and not mine:
        mine = [m for m in broker_messages(api.settings) if m["body"][0] == [api.tenant_a, sid]]
        time.sleep(0.05)
    assert len(mine) == 1
    msg = mine[0]
    args, kwargs, _embed = msg["body"]  # type: ignore[misc]
    # ids, and the one flag that makes it a fair ticket (store/fair.py)
    assert args == [api.tenant_a, sid] and kwargs == {"fair": True}
    assert msg["envelope"]["headers"]["task"] == "turnkeep.run_session"  # type: ignore[index]
    assert secret_text.encode() not in msg["raw"]  # type: ignore[operator]


def test_fifty_concurrent_identical_admissions(api: Api, store: Store, sid: str) -> None:
    n = 50
    client = api.client(limits=httpx.Limits(max_connections=n, max_keepalive_connections=n))
    results = at_once(n, lambda i: admit(client, sid, "same-turn", text="Is it raining in Oslo?"))
    responses = [r for r in results if isinstance(r, httpx.Response)]
    assert len(responses) == n, [r for r in results if not isinstance(r, httpx.Response)]
    codes = sorted(r.status_code for r in responses)
    assert codes == [200] * (n - 1) + [202], codes
    bodies = {r.content for r in responses}
    assert len(bodies) == 1
    assert responses[0].json()["state"] == "queued"
    turns = store.reads.list_turns(api.tenant_a, sid)
    assert [t.turn_id for t in turns] == ["same-turn"]
    events, head = store.reads.list_events(api.tenant_a, sid, after=0, limit=100)
    assert [e.type for e in events] == ["turn.accepted"] and head == 1
    # every answer enqueued the (non-terminal) session, from many threads at once
    deadline = time.monotonic() + 10
    sent: list[object] = []
    while time.monotonic() < deadline and len(sent) < n:
        sent = [m for m in broker_messages(api.settings) if m["body"][0] == [api.tenant_a, sid]]
        time.sleep(0.05)
    assert len(sent) == n


def test_reused_key_with_other_input_is_409(api: Api, sid: str) -> None:
    c = api.client()
    assert admit(c, sid, "k1", text="one").status_code == 202
    r = admit(c, sid, "k1", text="two")
    assert r.status_code == 409
    assert r.headers["content-type"] == "application/problem+json"
    assert r.json()["code"] == "idempotency_conflict"
    # a budget is part of the identity too
    r = admit(c, sid, "k1", text="one", budget={"max_tokens": 10})
    assert r.json()["code"] == "idempotency_conflict"
    # a budget of only nulls is no budget: same identity
    assert admit(c, sid, "k1", text="one", budget={"max_tokens": None}).status_code == 200


def test_other_agent_for_existing_session_is_409(api: Api, sid: str) -> None:
    c = api.client()
    assert admit(c, sid, "k1").status_code == 202
    r = admit(c, sid, "k2", agent="other")
    assert r.status_code == 409
    assert r.json()["code"] == "session_agent_conflict"


def test_missing_key_gets_a_generated_id(api: Api, store: Store, sid: str) -> None:
    c = api.client()
    r1, r2 = admit(c, sid), admit(c, sid)
    assert r1.status_code == r2.status_code == 202
    ids = [r1.json()["turn_id"], r2.json()["turn_id"]]
    assert ids[0] != ids[1] and all(len(i) == 32 for i in ids)
    assert [t.turn_id for t in store.reads.list_turns(api.tenant_a, sid)] == ids


def test_agent_output_schema_is_the_default(api: Api, store: Store, sid: str) -> None:
    assert admit(api.client(), sid, "k1", agent="other").status_code == 202
    turn = store.reads.get_turn(api.tenant_a, sid, "k1")
    assert turn.output_schema is not None and turn.output_schema["required"] == ["answer"]


def test_invalid_idempotency_key_is_400(api: Api, sid: str) -> None:
    r = admit(api.client(), sid, "bad key!")
    assert r.status_code == 400 and r.json()["code"] == "invalid_idempotency_key"


def _problem(r: httpx.Response, status: int, code: str) -> dict[str, object]:
    assert r.status_code == status, r.text
    assert r.headers["content-type"] == "application/problem+json"
    body = r.json()
    assert {"type", "title", "status", "code", "detail"} <= set(body)
    assert body["code"] == code and body["status"] == status
    return dict(body)


def test_validation_errors_name_the_field(api: Api, sid: str) -> None:
    c = api.client()
    url = f"/v1/sessions/{sid}/turns"
    cases = [
        ({"agent": "demo", "input": [{"role": "robot", "content": "x"}]}, "body.input.0.role"),
        ({"agent": "demo", "input": []}, "body.input"),
        ({"agent": "demo", "input": [{"role": "user", "content": "x"}], "extra": 1}, "body.extra"),
        (
            {
                "agent": "demo",
                "input": [{"role": "user", "content": "x"}],
                "budget": {"max_tokens": 0},
            },
            "body.budget.max_tokens",
        ),
        (
            {
                "agent": "demo",
                "input": [{"role": "user", "content": "x"}],
                "budget": {"max_seconds": -1},
            },
            "body.budget.max_seconds",
        ),
        (
            {
                "agent": "demo",
                "input": [{"role": "user", "content": "x"}],
                "output_schema": {"type": "no-such-type"},
            },
            "body.output_schema",
        ),
        ({"input": [{"role": "user", "content": "x"}]}, "body.agent"),
        ({"agent": "demo", "input": [{"role": "user", "content": "x"}] * 101}, "body.input"),
    ]
    for body, field in cases:
        problem = _problem(
            c.post(url, json=body, headers={"Idempotency-Key": "v"}), 422, "validation_error"
        )
        assert field in str(problem["detail"]), (field, problem)
        assert "x" not in [e.get("input") for e in problem["errors"]]  # type: ignore[attr-defined]
    for bad_sid in ("bad:sid", "new%0Aline", "x" * 129):
        ok_body = {"agent": "demo", "input": [{"role": "user", "content": "x"}]}
        problem = _problem(
            c.post(f"/v1/sessions/{bad_sid}/turns", json=ok_body), 422, "validation_error"
        )
        assert "path.sid" in str(problem["detail"])
    r = c.post(url, json={"agent": "nobody", "input": [{"role": "user", "content": "x"}]})
    _problem(r, 422, "unknown_agent")


def test_malformed_json_is_400(api: Api, sid: str) -> None:
    r = api.client().post(
        f"/v1/sessions/{sid}/turns",
        content=b'{"agent": "demo", "inp',
        headers={"Content-Type": "application/json"},
    )
    _problem(r, 400, "invalid_json")


def test_oversized_body_is_413(api: Api, sid: str) -> None:
    c = api.client()
    big = "x" * (api.settings.bounds.max_body_bytes + 10)
    r = admit(c, sid, "big", text=big)
    _problem(r, 413, "payload_too_large")

    def chunks():  # no Content-Length: the streamed size is what counts
        for _ in range(10):
            yield b" " * (api.settings.bounds.max_body_bytes // 5)

    r = c.post(
        f"/v1/sessions/{sid}/turns", content=chunks(), headers={"Content-Type": "application/json"}
    )
    assert "content-length" not in r.request.headers
    _problem(r, 413, "payload_too_large")
    # nothing was admitted
    assert c.get(f"/v1/sessions/{sid}").status_code == 404


def test_bench_timings_add_server_timing_only(
    api: Api, sid: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """TURNKEEP_BENCH_TIMINGS (api/timings.py): the same answer, plus Server-Timing with
    each piece; off (the default), no header."""
    from turnkeep.api import timings

    c = api.client()
    plain = admit(c, sid, "turn-plain")
    assert plain.status_code == 202 and "server-timing" not in plain.headers
    monkeypatch.setattr(timings, "ENABLED", True)
    timed = admit(c, sid, "turn-timed")
    assert timed.status_code == 202, timed.text
    assert timed.headers["location"] == f"/v1/sessions/{sid}/turns/turn-timed"
    parts = timings.parse(timed.headers["server-timing"])
    expected = {"auth", "parse", "checks", "hash", "statement", "thread", "response", "enqueue"}
    assert set(parts) == expected
    assert all(v >= 0 for k, v in parts.items() if k != "thread")
    replay = admit(c, sid, "turn-plain")
    assert replay.status_code == 200 and replay.content == plain.content
    assert set(plain.headers) | {"server-timing"} == set(replay.headers)
