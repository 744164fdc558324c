"""Delegation with real workers (runtime/delegation.py, worker/delegation.py): a parent
hands tasks to a specialist, each task is a child turn admitted through the same
statement, the parent parks without a lease and resumes with the children's results
joined in task order; the ceilings refuse as typed errors the model sees; cancelling
the parent cancels its children."""

from __future__ import annotations

import json

import psycopg

from tests.integration.test_providers import serve, sse
from tests.invariants import check_all
from tests.procs import wait_for
from turnkeep.runtime.states import TurnState


def _children(database_url: str, tenant: str) -> list[tuple[str, str, str, str]]:
    """(session, turn, state, task id) of the tenant's delegated turns, by admission."""
    with psycopg.connect(database_url.replace("+psycopg", "")) as conn:
        rows = conn.execute(
            "SELECT session_id, turn_id, state, input -> 'delegation' -> 'parent' ->> 'task_id'"
            " FROM turns WHERE tenant_id = %s AND turn_id LIKE 'dlg-%%' ORDER BY ordinal",
            (tenant,),
        ).fetchall()
    return [tuple(r) for r in rows]  # type: ignore[misc]


def _joined(text: str) -> dict:
    assert text.startswith("joined: "), text
    return json.loads(text.removeprefix("joined: "))


def test_three_tasks_run_as_three_children_and_join_in_task_order(
    procs, client, store, tenant, sid, database_url
):
    procs.worker()
    procs.worker()
    tid = client.admit(tenant, sid, "manager", "tasks=c,a,b")
    turn = client.wait_terminal(tenant, sid, tid, timeout=60)
    assert turn.state is TurnState.COMPLETED, turn.error
    joined = _joined(turn.result["text"])
    assert [r["id"] for r in joined["results"]] == ["c", "a", "b"]
    assert all(r["state"] == "completed" for r in joined["results"])
    assert all(r["result"]["text"] == "done after 1 calls, 0 errors" for r in joined["results"])
    children = _children(database_url, tenant)
    assert [c[3] for c in children] == ["c", "a", "b"]
    assert {c[2] for c in children} == {"completed"}
    # at most two at once: three tasks in two lanes (sessions), each running in order
    assert len({c[0] for c in children}) == 2
    events = store.reads.turn_events(tenant, sid, tid)
    waits = [e for e in events if e.type == "input.requested"]
    assert [w.data["kind"] for w in waits] == ["delegation"]
    assert [e.data["by"] for e in events if e.type == "input.resolved"] == ["runtime"]
    joins = [e for e in events if e.type == "tool.completed"]
    assert len(joins) == 1 and joins[0].data["specialist"] == "helper"
    # what the children spent is on the join, counted against the parent's bounds
    spent = sum(
        int(u.get("input_tokens", 0)) + int(u.get("output_tokens", 0))
        for u in (store.reads.get_turn(tenant, c[0], c[1]).usage for c in children)
    )
    assert spent > 0 and joins[0].data["children_usage"]["tokens"] == spent
    # the children's own tools ran once each, under their own keys
    child_turns = [(tenant, c[0], c[1]) for c in children]
    assert (
        check_all(database_url, tenants=[tenant], accepted=[(tenant, sid, tid), *child_turns]) == []
    )


def test_fan_out_past_the_ceiling_is_an_error_the_model_sees_and_admits_nothing(
    procs, client, tenant, sid, database_url
):
    procs.worker()
    tid = client.admit(tenant, sid, "manager", "tasks=a,b,c,d,e")
    turn = client.wait_terminal(tenant, sid, tid, timeout=60)
    assert turn.state is TurnState.COMPLETED, turn.error
    assert _joined(turn.result["text"])["error"] == "delegation_fanout_exceeded"
    assert _children(database_url, tenant) == []


def test_depth_past_the_ceiling_is_refused_to_the_child(procs, client, tenant, sid, database_url):
    procs.worker()
    procs.worker()
    tid = client.admit(tenant, sid, "manager", "nested tasks=x")
    turn = client.wait_terminal(tenant, sid, tid, timeout=60)
    assert turn.state is TurnState.COMPLETED, turn.error
    [child] = _joined(turn.result["text"])["results"]
    assert child["state"] == "completed"
    # the child (depth 1) tried to delegate further: refused, no grandchild admitted
    assert _joined(child["result"]["text"])["error"] == "delegation_depth_exceeded"
    assert [c[3] for c in _children(database_url, tenant)] == ["x"]


def test_cancelling_the_parent_cancels_its_children(
    procs, client, store, tenant, sid, database_url
):
    procs.worker({"TURNKEEP_TEST_TOOL_SLEEP": "3"})
    tid = client.admit(tenant, sid, "manager", "tasks=a,b")
    wait_for(
        lambda: store.reads.get_turn(tenant, sid, tid).state is TurnState.WAITING,
        30,
        what="the parent parked on its children",
    )
    store.turns.request_cancel(tenant, sid, tid, subject="test")
    # no API here (the store's own statement): the children poll their parent at
    # their next safe point and stop
    wait_for(
        lambda: (
            {c[2] for c in _children(database_url, tenant)} <= {"cancelled", "completed"}
            and len(_children(database_url, tenant)) == 2
        ),
        30,
        what="the children ended",
    )
    assert store.reads.get_turn(tenant, sid, tid).state is TurnState.CANCELLED
    assert "cancelled" in {c[2] for c in _children(database_url, tenant)}


def test_cancelling_the_parent_over_the_api_cancels_its_children(
    procs, service_env, store, database_url, sid
):
    from tests.integration.api_server import admit, serve_api

    procs.worker({"TURNKEEP_TEST_TOOL_SLEEP": "3"})
    # the worker processes' broker and agents, so the API's enqueues reach them
    with serve_api(
        service_env, agents="tests.agents", broker_url=service_env["TURNKEEP_REDIS_URL"]
    ) as api:
        c = api.client()
        tenant = api.tenant_a
        assert admit(c, sid, "parent-1", text="tasks=a,b", agent="manager").status_code == 202
        wait_for(
            lambda: c.get(f"/v1/sessions/{sid}/turns/parent-1").json()["state"] == "waiting",
            30,
            what="the parent parked on its children",
        )
        r = c.post(f"/v1/sessions/{sid}/turns/parent-1/cancel")
        assert r.status_code == 202 and r.json()["state"] == "cancelled", r.text
        # the API cancels them with the parent: the queued one at once, the running one
        # at its next safe point
        wait_for(
            lambda: (
                len(_children(database_url, tenant)) == 2
                and {ch[2] for ch in _children(database_url, tenant)} <= {"cancelled", "completed"}
            ),
            30,
            what="the children ended",
        )
        states = [ch[2] for ch in _children(database_url, tenant)]
        assert "cancelled" in states, states


def _text_reply(model: str, text: str) -> bytes:
    base = {"id": "chatcmpl-s", "object": "chat.completion.chunk", "created": 1, "model": model}
    chunks = [
        {**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": text}}]},
        {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
        {**base, "choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 3}},
    ]
    return b"".join(f"data: {json.dumps(c)}\n\n".encode() for c in chunks) + b"data: [DONE]\n\n"


def test_each_child_sees_only_its_own_task_at_the_wire(procs, client, tenant, sid):
    """Three children of one call in one lane (max_concurrent=1): each one's request to
    the provider holds its own task and nothing of its siblings' (issue 25)."""
    model = "scribe-child"
    with serve() as fake:
        with fake.lock:
            fake.scripts[model] = [sse(_text_reply(model, f"line {i}")) for i in range(3)]
            fake.seen[model], fake.sent[model] = [], 0
        procs.worker(
            {"TURNKEEP_OPENAI_BASE_URL": fake.base + "/v1", "TURNKEEP_OPENAI_API_KEY": "sk-x"}
        )
        tid = client.admit(tenant, sid, "manager", "via=scribe tasks=a,b,c")
        turn = client.wait_terminal(tenant, sid, tid, timeout=60)
        assert turn.state is TurnState.COMPLETED, turn.error
        seen = [s.body for s in fake.seen[model]]
    assert len(seen) == 3
    for body, task in zip(seen, "abc", strict=True):  # one lane: in task order
        said = [(m["role"], m.get("content")) for m in body["messages"] if m["role"] != "system"]
        assert said == [("user", f"steps=1 task {task}")], said
        others = [f"task {t}" for t in "abc" if t != task]
        assert not any(o in json.dumps(body) for o in others)
