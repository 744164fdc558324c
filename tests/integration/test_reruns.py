"""Re-run a turn from a step over real HTTP with a real worker and a local server
speaking the OpenAI wire (issue 25, docs/reruns.md): the steps before ``from_step`` are
reused (never sent to the model or run again: counted at the wire and in the tools'
own log), an edited outcome is where the rerun starts, its lineage is on the turn and
in the journal, and the request is idempotent by its key."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from tests.integration.api_server import Api, admit, serve_api
from tests.integration.test_providers import FakeAPI, serve, sse
from tests.invariants import check_all
from tests.procs import wait_for
from turnkeep.runtime.states import TurnState
from turnkeep.store.facade import Store

MODEL = "rerun-model"


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeAPI]:
    with serve() as server:
        yield server


@pytest.fixture(scope="module")
def api(service_env: dict[str, str]) -> Iterator[Api]:
    with serve_api(
        service_env, agents="tests.agents", broker_url=service_env["TURNKEEP_REDIS_URL"]
    ) as handle:
        yield handle


def _chunks(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-r",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": MODEL,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def _stream(*chunks: dict[str, Any]) -> bytes:
    usage = {**_chunks({}), "choices": [], "usage": {"prompt_tokens": 9, "completion_tokens": 4}}
    parts = [*chunks, usage]
    return b"".join(f"data: {json.dumps(c)}\n\n".encode() for c in parts) + b"data: [DONE]\n\n"


def _text(text: str) -> Any:
    return sse(_stream(_chunks({"role": "assistant", "content": text}), _chunks({}, "stop")))


def _counts(*labels: str) -> Any:
    calls = [
        {
            "index": i,
            "id": f"call_{label}",
            "type": "function",
            "function": {"name": "count", "arguments": json.dumps({"label": label})},
        }
        for i, label in enumerate(labels)
    ]
    return sse(
        _stream(
            _chunks({"role": "assistant", "content": None, "tool_calls": calls}),
            _chunks({}, "tool_calls"),
        )
    )


def _script(fake: FakeAPI, *replies: Any) -> None:
    with fake.lock:
        fake.scripts[MODEL], fake.seen[MODEL], fake.sent[MODEL] = list(replies), [], 0


def _requests(fake: FakeAPI) -> list[dict[str, Any]]:
    with fake.lock:
        return [s.body for s in fake.seen[MODEL]]


def _tool_calls(database_url: str, prefix: str) -> int:
    with psycopg.connect(database_url.replace("+psycopg", "")) as conn:
        row = conn.execute(
            "SELECT count(*) FROM test_tool_calls WHERE key LIKE %s", (prefix + "%",)
        ).fetchone()
    assert row is not None
    return int(row[0])


def _worker(procs: Any, fake: FakeAPI) -> None:
    procs.worker({"TURNKEEP_OPENAI_BASE_URL": fake.base + "/v1", "TURNKEEP_OPENAI_API_KEY": "k"})


def _settled(store: Store, tenant: str, sid: str, tid: str) -> Any:
    def done() -> Any:
        turn = store.reads.get_turn(tenant, sid, tid)
        return turn if turn.state.terminal else None

    return wait_for(done, 60, interval=0.1, what=f"turn {tid} settled")


def _source(api: Api, store: Store, fake: FakeAPI, sid: str) -> Any:
    """A settled turn of four steps: a model call asking for two counts (steps 2, 3),
    then the final answer (step 4)."""
    r = admit(api.client(), sid, "src", agent="rerunner", text="count a and b")
    assert r.status_code == 202, r.text
    turn = _settled(store, api.tenant_a, sid, "src")
    assert turn.state is TurnState.COMPLETED, turn.error
    steps = [(e.type, e.step) for e in store.reads.turn_events(api.tenant_a, sid, "src") if e.step]
    assert steps == [
        ("model.completed", 1),
        ("tool.completed", 2),
        ("tool.completed", 3),
        ("model.completed", 4),
    ]
    return turn


def test_a_rerun_from_a_tool_step_reuses_the_steps_before_it_and_starts_from_the_edit(
    api: Api, procs: Any, store: Store, fake: FakeAPI, sid: str, database_url: str
) -> None:
    _script(fake, _counts("a", "b"), _text("source: 2 counted"), _text("rerun: b was edited"))
    _worker(procs, fake)
    _source(api, store, fake, sid)
    assert len(_requests(fake)) == 2
    tenant, c = api.tenant_a, api.client()
    path = f"/v1/sessions/{sid}/turns/src/rerun"
    body = {"from_step": 3, "replace": {"tool_result": {"content": "b: edited by hand"}}}
    r = c.post(path, json=body, headers={"Idempotency-Key": "rr-1"})
    assert r.status_code == 202, r.text
    answered = r.json()
    assert answered["turn_id"] == "rr-1" and answered["session_id"] == sid
    assert answered["rerun_of"] == {
        "session_id": sid,
        "turn_id": "src",
        "from_step": 3,
        "edited": "tool_result",
        "by": "alice",
    }
    assert r.headers["location"] == f"/v1/sessions/{sid}/turns/rr-1"
    # the same request again is the same rerun; another under the key a conflict
    again = c.post(path, json=body, headers={"Idempotency-Key": "rr-1"})
    assert again.status_code == 200 and again.json()["turn_id"] == "rr-1"
    other = c.post(path, json={"from_step": 2}, headers={"Idempotency-Key": "rr-1"})
    assert other.status_code == 409 and other.json()["code"] == "idempotency_conflict"

    turn = _settled(store, tenant, sid, "rr-1")
    assert turn.state is TurnState.COMPLETED, turn.error
    assert turn.result["text"] == "rerun: b was edited"
    # at the wire: one model call for the rerun (step 4), none for steps 1-3
    sent = _requests(fake)
    assert len(sent) == 3
    said = [(m["role"], m.get("content")) for m in sent[2]["messages"] if m["role"] != "system"]
    assert said[0] == ("user", "count a and b")
    # the conversation the source saw: its input once, none of its answer
    assert [m for m in said if m[0] == "user"] == [("user", "count a and b")]
    assert not any("source: 2 counted" in str(m[1]) for m in said)
    tools = [m["content"] for m in sent[2]["messages"] if m["role"] == "tool"]
    assert json.loads(tools[0])["counted"] == "a" and tools[1] == "b: edited by hand"
    # no tool ran again: the source's two calls, none under the rerun's keys
    assert _tool_calls(database_url, f"{tenant}/{sid}/src/") == 2
    assert _tool_calls(database_url, f"{tenant}/{sid}/rr-1/") == 0
    events = store.reads.turn_events(tenant, sid, "rr-1")
    source = {e.step: e for e in store.reads.turn_events(tenant, sid, "src") if e.step}
    outcomes = {e.step: e for e in events if e.step}
    assert outcomes[1].data["reused"] == {"turn_id": "src", "seq": source[1].seq}
    assert outcomes[2].data["reused"] == {"turn_id": "src", "seq": source[2].seq}
    assert outcomes[1].data["message"] == source[1].data["message"]
    assert outcomes[3].data["edited"] == {"by": "alice", "replaces_seq": source[3].seq}
    assert all(outcomes[s].fence == 0 for s in (1, 2, 3)) and outcomes[4].fence > 0
    assert "reused" not in outcomes[4].data and "edited" not in outcomes[4].data
    accepted = next(e for e in events if e.type == "turn.accepted")
    assert accepted.data["input"]["rerun"]["from_step"] == 3
    # the reused model call cost the rerun nothing: only its own call is charged
    assert turn.usage["input_tokens"] == 9 and turn.usage["output_tokens"] == 4
    assert check_all(database_url, tenants=[tenant]) == []


def test_a_rerun_in_a_fork_from_an_edited_final_answer_calls_nothing(
    api: Api, procs: Any, store: Store, fake: FakeAPI, sid: str, database_url: str
) -> None:
    _script(fake, _counts("a", "b"), _text("source: 2 counted"))
    _worker(procs, fake)
    _source(api, store, fake, sid)
    tenant, c = api.tenant_a, api.client()
    body = {
        "from_step": 4,
        "replace": {"model_answer": {"content": "edited: nothing to count"}},
        "fork": True,
        "session_id": f"{sid}-fork",
    }
    r = c.post(f"/v1/sessions/{sid}/turns/src/rerun", json=body)
    assert r.status_code == 202, r.text
    tid = r.json()["turn_id"]
    assert r.json()["session_id"] == f"{sid}-fork"
    turn = _settled(store, tenant, f"{sid}-fork", tid)
    assert turn.state is TurnState.COMPLETED, turn.error
    assert turn.result["text"] == "edited: nothing to count"
    assert len(_requests(fake)) == 2  # the source's two calls, nothing for the rerun
    assert _tool_calls(database_url, f"{tenant}/{sid}-fork/") == 0
    # the session itself is untouched: its one turn
    listed = c.get(f"/v1/sessions/{sid}/turns").json()
    assert [t["turn_id"] for t in listed["turns"]] == ["src"]
    assert check_all(database_url, tenants=[tenant]) == []


def test_a_rerun_that_does_not_fit_the_source_is_refused_and_writes_nothing(
    api: Api, procs: Any, store: Store, fake: FakeAPI, sid: str
) -> None:
    _script(fake, _counts("a", "b"), _text("source: 2 counted"))
    _worker(procs, fake)
    _source(api, store, fake, sid)
    c = api.client()
    path = f"/v1/sessions/{sid}/turns/src/rerun"
    head = store.reads.get_session(api.tenant_a, sid).head_seq
    cases = [
        ({"from_step": 6}, "body.from_step"),
        (
            {"from_step": 1, "replace": {"tool_result": {"content": "x"}}},
            "body.replace.tool_result",
        ),
        (
            {"from_step": 2, "replace": {"model_answer": {"content": "x"}}},
            "body.replace.model_answer",
        ),
        ({"from_step": 2, "replace": {}}, "body.replace"),
        ({"from_step": 2, "session_id": "elsewhere"}, "body.session_id"),
    ]
    for body, where in cases:
        r = c.post(path, json=body)
        assert r.status_code == 422, (body, r.text)
        assert ".".join(map(str, r.json()["errors"][0]["loc"])).startswith(where), r.json()
    # another tenant's turn is missing; a reader may not rerun
    r = api.client("b").post(path, json={"from_step": 2})
    assert r.status_code == 404 and r.json()["code"] == "not_found"
    r = api.client("a-reader").post(path, json={"from_step": 2})
    assert r.status_code == 403
    assert store.reads.get_session(api.tenant_a, sid).head_seq == head
