"""Double-texting over real HTTP (``multitask`` on admission): ``reject`` refuses a
new turn while the session is busy, ``interrupt`` admits it and cancels every earlier
active turn in the same transaction, ``enqueue`` (the default) queues it. A replay of
an Idempotency-Key answers the stored turn whatever the strategy says, and the lane
checks hold under concurrent admissions (the store, many threads)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import redis

from tests.integration.api_server import Api, serve_api
from tests.invariants import steps_after_cancel
from tests.procs import Procs, at_once, wait_for
from turnkeep.runtime.multitask import Multitask
from turnkeep.runtime.states import TurnState
from turnkeep.store import channel
from turnkeep.store.errors import SessionBusy
from turnkeep.store.facade import Store
from turnkeep.store.keys import events_channel
from turnkeep.store.new_turn import NewTurn

INTERRUPTED = {"by": "alice", "reason": "interrupted"}


@pytest.fixture(scope="module")
def api(service_env: dict[str, str]) -> Iterator[Api]:
    # the worker processes' broker and agents, so the API's enqueues reach them
    with serve_api(
        service_env, agents="tests.agents", broker_url=service_env["TURNKEEP_REDIS_URL"]
    ) as handle:
        yield handle


def _post(
    c: httpx.Client,
    sid: str,
    key: str,
    *,
    text: str = "steps=1",
    agent: str = "counter",
    multitask: str | None = None,
) -> httpx.Response:
    body: dict[str, Any] = {"agent": agent, "input": [{"role": "user", "content": text}]}
    if multitask is not None:
        body["multitask"] = multitask
    return c.post(f"/v1/sessions/{sid}/turns", json=body, headers={"Idempotency-Key": key})


def _state(c: httpx.Client, sid: str, tid: str) -> dict[str, Any]:
    r = c.get(f"/v1/sessions/{sid}/turns/{tid}")
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    return body


def _until(c: httpx.Client, sid: str, tid: str, *states: str, timeout: float = 30) -> Any:
    def get() -> dict[str, Any] | None:
        t = _state(c, sid, tid)
        return t if t["state"] in states else None

    return wait_for(get, timeout, what=f"turn {tid} {'/'.join(states)}")


def _journal(store: Store, tenant: str, sid: str) -> tuple[list[Any], int]:
    events, head = store.reads.list_events(tenant, sid, after=0)
    # contiguous from 1, at most one terminal event per turn
    assert [e.seq for e in events] == list(range(1, head + 1))
    ends: dict[str, int] = {}
    for e in events:
        if e.type in ("turn.completed", "turn.failed", "turn.cancelled"):
            ends[e.turn_id] = ends.get(e.turn_id, 0) + 1
    assert all(n == 1 for n in ends.values()), ends
    return events, head


def _types(store: Store, tenant: str, sid: str, tid: str) -> list[str]:
    return [e.type for e in store.reads.turn_events(tenant, sid, tid)]


# -- reject -----------------------------------------------------------------------------


def test_reject_is_409_session_busy_while_a_turn_is_active_and_writes_nothing(
    api: Api, store: Store, sid: str
) -> None:
    c = api.client()
    assert _post(c, sid, "first").status_code == 202  # no worker: it stays queued
    head = store.reads.get_session(api.tenant_a, sid).head_seq
    r = _post(c, sid, "second", multitask="reject")
    assert r.status_code == 409, r.text
    assert r.headers["content-type"] == "application/problem+json"
    assert r.json()["code"] == "session_busy"
    assert store.reads.get_session(api.tenant_a, sid).head_seq == head
    assert [t.turn_id for t in store.reads.list_turns(api.tenant_a, sid)] == ["first"]
    assert c.get(f"/v1/sessions/{sid}/turns/second").status_code == 404
    assert _types(store, api.tenant_a, sid, "first") == ["turn.accepted"]

    # idle again (the active turn ended): the same key is admitted
    assert c.post(f"/v1/sessions/{sid}/turns/first/cancel").json()["state"] == "cancelled"
    again = _post(c, sid, "second", multitask="reject")
    assert again.status_code == 202, again.text
    assert again.json()["accepted_seq"] == head + 3  # after the two cancel events
    _journal(store, api.tenant_a, sid)


def test_reject_admits_on_a_new_or_idle_session_and_the_new_turn_runs(
    api: Api, procs: Procs, store: Store, sid: str
) -> None:
    procs.worker()
    c = api.client()
    first = _post(c, sid, "first", multitask="reject")
    assert first.status_code == 202, first.text  # a new session is idle
    assert _until(c, sid, "first", "completed", "failed", "cancelled")["state"] == "completed"
    second = _post(c, sid, "second", multitask="reject")
    assert second.status_code == 202, second.text
    assert _until(c, sid, "second", "completed", "failed", "cancelled")["state"] == "completed"
    _journal(store, api.tenant_a, sid)


def test_a_replay_is_never_refused_as_busy(api: Api, store: Store, sid: str) -> None:
    c = api.client()
    first = _post(c, sid, "first", multitask="reject")
    assert first.status_code == 202
    assert _post(c, sid, "second").status_code == 202  # enqueue: busy or not
    head = store.reads.get_session(api.tenant_a, sid).head_seq
    # the session is busy (both queued), yet each replay answers its stored turn
    replay = _post(c, sid, "first", multitask="reject")
    assert replay.status_code == 200 and replay.content == first.content
    assert _post(c, sid, "second", multitask="reject").status_code == 200
    # another input under a used key is the idempotency conflict, not "busy"
    other = _post(c, sid, "first", text="steps=2", multitask="reject")
    assert other.status_code == 409 and other.json()["code"] == "idempotency_conflict"
    assert _post(c, sid, "third", multitask="reject").json()["code"] == "session_busy"
    assert store.reads.get_session(api.tenant_a, sid).head_seq == head
    assert [t.turn_id for t in store.reads.list_turns(api.tenant_a, sid)] == ["first", "second"]


# -- interrupt --------------------------------------------------------------------------


def test_interrupt_cancels_a_running_turn_at_its_next_safe_point_and_the_new_one_runs(
    api: Api, procs: Procs, store: Store, sid: str
) -> None:
    procs.worker({"TURNKEEP_TEST_TOOL_SLEEP": "0.2"})
    c = api.client()
    assert _post(c, sid, "long", text="steps=100").status_code == 202
    wait_for(
        lambda: "tool.completed" in _types(store, api.tenant_a, sid, "long"),
        30,
        what="the long turn under way",
    )
    r = _post(c, sid, "now", multitask="interrupt")
    assert r.status_code == 202, r.text
    assert r.json()["state"] == "queued"
    long = _state(c, sid, "long")
    assert long["cancel_requested"] is True and long["state"] in ("running", "cancelled")
    requested = [
        e
        for e in store.reads.turn_events(api.tenant_a, sid, "long")
        if e.type == "turn.cancel_requested"
    ]
    assert len(requested) == 1
    assert requested[0].data == {**INTERRUPTED, "by_turn": "now"}
    assert requested[0].seq == r.json()["accepted_seq"] + 1

    assert _until(c, sid, "long", "completed", "failed", "cancelled")["state"] == "cancelled"
    done = _until(c, sid, "now", "completed", "failed", "cancelled")
    assert done["state"] == "completed", done
    assert _types(store, api.tenant_a, sid, "long")[-1] == "turn.cancelled"
    # at its next safe point: the step in flight when the interrupt landed, no other
    assert steps_after_cancel(store.reads.turn_events(api.tenant_a, sid, "long")) <= 1
    assert store.reads.get_turn(api.tenant_a, sid, "long").attempt == 1
    _journal(store, api.tenant_a, sid)


def test_interrupt_settles_a_waiting_turn_at_once_and_publishes_what_it_wrote(
    api: Api, procs: Procs, store: Store, sid: str, redis_url: str
) -> None:
    procs.worker()
    c = api.client()
    assert _post(c, sid, "asks", agent="banker", text="go").status_code == 202
    _until(c, sid, "asks", "waiting")
    live = redis.Redis.from_url(redis_url)
    sub = live.pubsub(ignore_subscribe_messages=True)
    sub.subscribe(events_channel(api.tenant_a, sid))
    try:
        r = _post(c, sid, "instead", agent="banker", text="go", multitask="interrupt")
        assert r.status_code == 202, r.text
        # a waiting turn holds no worker: cancelled by the admission's own transaction
        asks = _state(c, sid, "asks")
        assert asks["state"] == "cancelled" and asks["pending_input"] is None
        events = store.reads.turn_events(api.tenant_a, sid, "asks")
        assert [e.type for e in events][-2:] == ["turn.cancel_requested", "turn.cancelled"]
        assert all(e.data == {**INTERRUPTED, "by_turn": "instead"} for e in events[-2:])
        accepted = r.json()["accepted_seq"]
        assert [e.seq for e in events[-2:]] == [accepted + 1, accepted + 2]

        seen: list[tuple[str, int]] = []

        def published() -> bool:
            msg = sub.get_message(timeout=0.2)
            for frame in channel.decode(msg["data"]) if msg is not None else []:
                if frame["kind"] == "event":
                    seen.append((frame["event"]["type"], frame["event"]["seq"]))
            return {accepted, accepted + 1, accepted + 2} <= {s for _, s in seen}

        wait_for(published, 60, interval=0, what="the committed events published")
        assert seen[:3] == [
            ("turn.accepted", accepted),
            ("turn.cancel_requested", accepted + 1),
            ("turn.cancelled", accepted + 2),
        ]
    finally:
        sub.close()
        live.close()
    # the lane moved on: the new turn ran up to its own approval request
    pending = _until(c, sid, "instead", "waiting")["pending_input"]
    ok = c.post(
        f"/v1/sessions/{sid}/turns/instead/inputs/{pending['request_id']}", json={"approved": True}
    )
    assert ok.status_code == 200, ok.text
    assert _until(c, sid, "instead", "completed", "failed", "cancelled")["state"] == "completed"
    _journal(store, api.tenant_a, sid)


def test_an_interrupt_replay_cancels_nothing(api: Api, store: Store, sid: str) -> None:
    c = api.client()
    assert _post(c, sid, "a").status_code == 202
    assert _post(c, sid, "b").status_code == 202
    first = _post(c, sid, "c", multitask="interrupt")
    assert first.status_code == 202
    states = {t.turn_id: t.state for t in store.reads.list_turns(api.tenant_a, sid)}
    assert states == {"a": "cancelled", "b": "cancelled", "c": "queued"}
    events, head = _journal(store, api.tenant_a, sid)
    # a's request and settlement, then b's, right after c's turn.accepted
    assert [(e.turn_id, e.type) for e in events[-5:]] == [
        ("c", "turn.accepted"),
        ("a", "turn.cancel_requested"),
        ("a", "turn.cancelled"),
        ("b", "turn.cancel_requested"),
        ("b", "turn.cancelled"),
    ]
    assert _post(c, sid, "d").status_code == 202  # queued behind c
    head = store.reads.get_session(api.tenant_a, sid).head_seq

    replay = _post(c, sid, "c", multitask="interrupt")
    assert replay.status_code == 200 and replay.content == first.content
    # and with another strategy: the key alone decides
    assert _post(c, sid, "c", multitask="reject").status_code == 200
    assert _post(c, sid, "c").status_code == 200
    conflict = _post(c, sid, "c", text="steps=3", multitask="interrupt")
    assert conflict.status_code == 409 and conflict.json()["code"] == "idempotency_conflict"
    assert store.reads.get_session(api.tenant_a, sid).head_seq == head
    assert store.reads.get_turn(api.tenant_a, sid, "d").state is TurnState.QUEUED
    assert store.reads.get_turn(api.tenant_a, sid, "c").state is TurnState.QUEUED


def test_interrupt_on_an_idle_session_is_an_admission(api: Api, store: Store, sid: str) -> None:
    c = api.client()
    r = _post(c, sid, "only", multitask="interrupt")
    assert r.status_code == 202 and r.json()["accepted_seq"] == 1
    assert store.reads.get_session(api.tenant_a, sid).head_seq == 1
    # another agent's session is refused as before, and nothing is cancelled
    other = _post(c, sid, "x", agent="banker", multitask="interrupt")
    assert other.status_code == 409 and other.json()["code"] == "session_agent_conflict"
    assert store.reads.get_turn(api.tenant_a, sid, "only").state is TurnState.QUEUED
    assert store.reads.get_session(api.tenant_a, sid).head_seq == 1


# -- enqueue and validation ---------------------------------------------------------------


def test_enqueue_is_the_default_and_touches_no_earlier_turn(
    api: Api, store: Store, sid: str
) -> None:
    c = api.client()
    assert _post(c, sid, "a").status_code == 202
    assert _post(c, sid, "b").status_code == 202
    assert _post(c, sid, "c", multitask="enqueue").status_code == 202
    turns = store.reads.list_turns(api.tenant_a, sid)
    assert [(t.turn_id, t.state, t.cancel_requested) for t in turns] == [
        ("a", TurnState.QUEUED, False),
        ("b", TurnState.QUEUED, False),
        ("c", TurnState.QUEUED, False),
    ]
    events, head = _journal(store, api.tenant_a, sid)
    assert [e.type for e in events] == ["turn.accepted"] * 3 and head == 3


@pytest.mark.parametrize("value", ["cancel", "REJECT", "", 7, None])
def test_an_unknown_multitask_is_422_and_writes_nothing(
    api: Api, store: Store, sid: str, value: Any
) -> None:
    c = api.client()
    body = {"agent": "counter", "input": [{"role": "user", "content": "hi"}], "multitask": value}
    r = c.post(f"/v1/sessions/{sid}/turns", json=body)
    assert r.status_code == 422, r.text
    assert r.json()["code"] == "validation_error" and "body.multitask" in r.json()["detail"]
    assert c.get(f"/v1/sessions/{sid}").status_code == 404


# -- the lane checks under concurrent admissions (the store, many threads) -----------------


def _admit_many(
    store: Store, client: Any, sid: str, tenant: str, n: int, mt: Multitask
) -> list[Any]:
    from turnkeep.runtime.hashing import input_hash

    agent = client.agents.get("counter")

    def one(i: int) -> Any:
        messages = [{"role": "user", "content": f"steps=1 #{i}"}]
        return store.turns.admit(
            NewTurn(
                tenant_id=tenant,
                session_id=sid,
                turn_id=f"u{i}",
                agent_name="counter",
                agent_hash=agent.definition_hash,
                input_hash=input_hash(
                    messages=messages,
                    agent_hash=agent.definition_hash,
                    output_schema=None,
                    budget=None,
                ),
                input={"messages": messages},
                output_schema=None,
                budget=None,
                submitted_by="racer",
                multitask=mt,
            )
        )

    return at_once(n, one, timeout=30)


def test_concurrent_first_admissions_with_reject_admit_exactly_one(
    store: Store, client: Any, tenant: str, sid: str
) -> None:
    # a brand-new session: lock_session creates the row, so the losers wait for the
    # winner and then find its turn active
    results = _admit_many(store, client, sid, tenant, 16, Multitask.REJECT)
    admitted = [r for r in results if not isinstance(r, Exception)]
    assert len(admitted) == 1, results
    assert all(isinstance(r, SessionBusy) for r in results if isinstance(r, Exception))
    assert store.reads.get_session(tenant, sid).head_seq == 1
    assert len(store.reads.list_turns(tenant, sid)) == 1


def test_concurrent_interrupts_leave_only_the_newest_turn_active(
    store: Store, client: Any, tenant: str, sid: str
) -> None:
    n = 12
    results = _admit_many(store, client, sid, tenant, n, Multitask.INTERRUPT)
    assert not [r for r in results if isinstance(r, Exception)], results
    turns = store.reads.list_turns(tenant, sid)
    assert len(turns) == n
    *older, newest = turns  # by ordinal
    assert newest.state is TurnState.QUEUED
    assert all(t.state is TurnState.CANCELLED for t in older)
    events, head = store.reads.list_events(tenant, sid, after=0, limit=1000)
    assert [e.seq for e in events] == list(range(1, head + 1)) and head == n + 2 * (n - 1)
    # each older turn was cancelled once, by the admission that took the lock after it
    for t, after in zip(older, turns[1:], strict=True):
        ends = [e for e in events if e.turn_id == t.turn_id and e.type == "turn.cancelled"]
        assert [e.data for e in ends] == [
            {"by": "racer", "reason": "interrupted", "by_turn": after.turn_id}
        ]
