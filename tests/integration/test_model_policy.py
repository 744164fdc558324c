"""Model policy with real workers against a local server speaking the OpenAI wire
format (runtime/model_policy.py): a fallback is taken only under the condition it
names, after the primary gave up, and recorded; a reply from a model the policy does
not allow fails the turn closed."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from tests.integration.test_providers import FakeAPI, serve, sse, status
from turnkeep.runtime.states import TurnState

UNAVAILABLE = b'{"error": {"message": "The server is overloaded", "type": "server_error"}}'


def _text(model: str, text: str) -> bytes:
    base = {"id": "chatcmpl-p", "object": "chat.completion.chunk", "created": 1, "model": model}
    chunks = [
        {**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": text}}]},
        {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
        {**base, "choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 3}},
    ]
    return b"".join(f"data: {json.dumps(c)}\n\n".encode() for c in chunks) + b"data: [DONE]\n\n"


@pytest.fixture
def fake() -> Iterator[FakeAPI]:
    with serve() as api:
        yield api


def _script(api: FakeAPI, model: str, *replies) -> None:
    with api.lock:
        api.scripts[model], api.seen[model], api.sent[model] = list(replies), [], 0


def _worker(procs, api: FakeAPI) -> None:
    procs.worker(
        {"TURNKEEP_OPENAI_BASE_URL": api.base + "/v1", "TURNKEEP_OPENAI_API_KEY": "sk-test-x"}
    )


def _decision(store, tenant: str, sid: str, tid: str) -> dict:
    [done] = [e for e in store.reads.turn_events(tenant, sid, tid) if e.type == "model.completed"]
    return done.data["decision"]


def test_the_primary_answers_and_says_so(procs, client, store, tenant, sid, fake):
    _script(fake, "policy-primary", sse(_text("policy-primary", "hello")))
    _script(fake, "policy-fallback")
    _worker(procs, fake)
    tid = client.admit(tenant, sid, "policy", "hi")
    turn = client.wait_terminal(tenant, sid, tid)
    assert turn.state is TurnState.COMPLETED, turn.error
    decision = _decision(store, tenant, sid, tid)
    assert decision["why"] == "primary" and decision["answered"] == "policy-primary"
    assert decision["passed_over"] == [] and fake.seen["policy-fallback"] == []


def test_an_outage_of_the_primary_falls_back_and_records_why(
    procs, client, store, tenant, sid, fake
):
    down = status(503, UNAVAILABLE, {"retry-after": "0"})
    _script(fake, "policy-primary", *[down] * 12)
    _script(fake, "policy-fallback", sse(_text("policy-fallback-2025-01-01", "from the fallback")))
    _worker(procs, fake)
    tid = client.admit(tenant, sid, "policy", "hi")
    turn = client.wait_terminal(tenant, sid, tid)
    assert turn.state is TurnState.COMPLETED, turn.error
    assert turn.result["text"] == "from the fallback"
    decision = _decision(store, tenant, sid, tid)
    assert decision["asked"] == {"provider": "openai", "model": "policy-fallback"}
    assert decision["answered"] == "policy-fallback-2025-01-01"  # a dated snapshot
    assert decision["why"] == "fallback: outage of policy-primary"
    assert decision["passed_over"] == [
        {"model": "policy-primary", "condition": "outage", "error": "model_transient"}
    ]
    # the primary was retried first: the switch is never made inside a retry
    assert len(fake.seen["policy-primary"]) > 1 and len(fake.seen["policy-fallback"]) == 1


def test_a_fallback_is_not_taken_for_a_condition_it_does_not_name(procs, client, tenant, sid, fake):
    down = status(503, UNAVAILABLE, {"retry-after": "0"})
    _script(fake, "policy-primary-2", *[down] * 12)
    _script(fake, "policy-fallback-2", sse(_text("policy-fallback-2", "never")))
    _worker(procs, fake)
    tid = client.admit(tenant, sid, "policy-context-only", "hi")
    turn = client.wait_terminal(tenant, sid, tid)
    assert turn.state is TurnState.FAILED and turn.error["code"] == "model_failed", turn.error
    assert fake.seen["policy-fallback-2"] == []


def test_a_reply_from_a_model_the_policy_does_not_allow_fails_closed(
    procs, client, store, tenant, sid, fake
):
    _script(fake, "policy-liar", sse(_text("gpt-4o-mini", "I am someone else")))
    _worker(procs, fake)
    tid = client.admit(tenant, sid, "policy-liar", "hi")
    turn = client.wait_terminal(tenant, sid, tid)
    assert turn.state is TurnState.FAILED and turn.error["code"] == "model_not_allowed"
    assert "gpt-4o-mini" in turn.error["message"]
    events = store.reads.turn_events(tenant, sid, tid)
    assert [e for e in events if e.type == "model.completed"] == []
    assert turn.result is None


def test_a_corrective_retry_at_the_wire_then_output_invalid(
    procs, client, store, tenant, sid, fake
):
    """The schema goes out as a strict response_format; an answer that fails it is sent
    back with what was wrong; a corrected one completes the turn, a second failure
    fails it output_invalid."""
    _script(
        fake,
        "policy-json",
        sse(_text("policy-json", '{"answer": "seven"}')),
        sse(_text("policy-json", '{"answer": 7}')),
        sse(_text("policy-json", "not json")),
        sse(_text("policy-json", "still not json")),
    )
    _worker(procs, fake)
    tid = client.admit(tenant, sid, "policy-json", "what is 3 + 4?")
    turn = client.wait_terminal(tenant, sid, tid)
    assert turn.state is TurnState.COMPLETED, turn.error
    assert turn.result["output"] == {"answer": 7}
    first, second = fake.seen["policy-json"][:2]
    fmt = first.body["response_format"]
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["strict"] is True
    assert fmt["json_schema"]["schema"]["required"] == ["answer"]
    told = second.body["messages"][-1]
    assert told["role"] == "user" and "did not match the required output schema" in told["content"]

    again = client.admit(tenant, sid, "policy-json", "and 5 + 5?")
    failed = client.wait_terminal(tenant, sid, again)
    assert failed.state is TurnState.FAILED and failed.error["code"] == "output_invalid"
    calls = [e for e in store.reads.turn_events(tenant, sid, again) if e.type == "model.completed"]
    assert [bool(e.data.get("correction")) for e in calls] == [True, False]
