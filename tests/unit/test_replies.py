"""One attempt of a Slack reply (worker/replies.py) against a scripted Web API
(httpx's MockTransport): the first attempt posts; a later one reads the thread back
first and posts only when the reply is not there; when Slack cannot say, nothing is
posted; Slack's ``ok: false`` is a failed attempt; the token goes in the header only."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import httpx

from turnkeep.runtime.bridges import SLACK, Thread, slack
from turnkeep.runtime.pending import AskedInput, TurnWait
from turnkeep.runtime.states import TurnState
from turnkeep.store.records import Claimed, WebhookRecord
from turnkeep.worker.replies import post_reply, prompt_text

API = "https://slack.test/api"
TOKEN = "xoxb-test-token"
THREAD = Thread("T1", "C1", "10.1")


def _claimed(attempts: int) -> Claimed:
    now = datetime.now(UTC)
    webhook = WebhookRecord(
        tenant_id="t",
        session_id="slack.s",
        turn_id="slack.t",
        run_id="",
        node_id="",
        url=API,
        secret_id="",
        delivery_id="dlv_1",
        attempts=attempts,
        next_attempt_at=now,
        claim="c",
        last_status=None,
        last_error=None,
        delivered_at=None,
        created_at=now,
        updated_at=now,
        connector=SLACK,
        target=THREAD.target(),
    )
    return Claimed(webhook, TurnState.COMPLETED, {"text": "four"}, None)


class Slack:
    """A scripted Web API: ``replies`` answers conversations.replies, ``post`` the
    post; records every request."""

    def __init__(self, replies: Any = None, post: Any = None) -> None:
        self.replies = replies if replies is not None else {"ok": True, "messages": []}
        self.post = post if post is not None else {"ok": True, "ts": "11.1"}
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        answer = self.replies if request.url.path.endswith("conversations.replies") else self.post
        if isinstance(answer, int):
            return httpx.Response(answer)
        return httpx.Response(200, json=answer)

    def methods(self) -> list[str]:
        return [r.url.path.rsplit("/", 1)[1] for r in self.requests]


def _attempt(fake: Slack, attempts: int) -> tuple[int | None, str]:
    with httpx.Client(transport=httpx.MockTransport(fake)) as http:
        return post_reply(http, _claimed(attempts), TOKEN)


def test_the_first_attempt_posts_the_answer_into_the_thread_with_its_key():
    fake = Slack()
    assert _attempt(fake, 1) == (200, "")
    assert fake.methods() == ["chat.postMessage"]
    (request,) = fake.requests
    assert request.headers["authorization"] == f"Bearer {TOKEN}"
    body = json.loads(request.content)
    assert body == slack.reply_body(THREAD, "four", "dlv_1")
    assert TOKEN not in request.content.decode() and TOKEN not in str(request.url)


def test_a_retry_finds_the_reply_an_unrecorded_attempt_posted_and_posts_nothing():
    posted = {"ok": True, "messages": [{"ts": "11.1", "metadata": slack.metadata("dlv_1")}]}
    fake = Slack(replies=posted)
    assert _attempt(fake, 2) == (200, "")
    assert fake.methods() == ["conversations.replies"]
    params = fake.requests[0].url.params
    assert (params["channel"], params["ts"], params["include_all_metadata"]) == (
        "C1",
        "10.1",
        "true",
    )


def test_a_retry_posts_when_the_thread_does_not_hold_it():
    other = {"ok": True, "messages": [{"ts": "11.1", "metadata": slack.metadata("dlv_other")}]}
    fake = Slack(replies=other)
    assert _attempt(fake, 3) == (200, "")
    assert fake.methods() == ["conversations.replies", "chat.postMessage"]


def test_when_slack_cannot_say_nothing_is_posted():
    for replies in (500, {"ok": False, "error": "ratelimited"}):
        fake = Slack(replies=replies)
        assert _attempt(fake, 2) == (None, "lookup_failed")
        assert fake.methods() == ["conversations.replies"]


def test_slacks_refusals_are_failed_attempts():
    assert _attempt(Slack(post={"ok": False, "error": "channel_not_found"}), 1) == (
        200,
        "channel_not_found",
    )
    assert _attempt(Slack(post=503), 1) == (503, "http 503")
    with httpx.Client(transport=httpx.MockTransport(Slack())) as http:
        assert post_reply(http, _claimed(1), "") == (None, "not_configured")


def _asked(request: dict[str, Any]) -> AskedInput:
    return AskedInput.from_json(request)


def test_what_an_approval_prompt_says():
    request = {
        "kind": "approval",
        "request_id": "approval-1-0",
        "tool": {"name": "pay"},
        "arguments": {"amount": 9},
        "answered_by": {"subject": "slack.U1"},
    }
    assert prompt_text(_asked(request)) == (
        'May I run *pay* with `{"amount": 9}`? Only the person who asked may answer.'
    )
    by_role = {**request, "answered_by": {"role": "admin"}}
    assert prompt_text(_asked(by_role)).endswith("Anyone with the admin role may answer.")
    long = {**request, "arguments": {"x": "y" * 1000}}
    assert len(prompt_text(_asked(long))) < 700
    question = {"kind": "question", "request_id": "question-2-0"}
    text = prompt_text(_asked(question))
    assert "question-2-0" in text and "API or CLI" in text


def test_a_thread_is_asked_each_open_request_of_a_group_and_never_a_timer():
    from turnkeep.worker.replies import asked

    one = {"request_id": "approval-1-0", "kind": "approval"}
    two = {"request_id": "approval-1-1", "kind": "approval"}

    def ids(pending: dict[str, Any]) -> list[str]:
        return [r.request_id for r in asked(TurnWait.from_json(pending))]

    assert ids(one) == ["approval-1-0"]
    group = {**one, "group": [{**one, "resolved": True}, two]}
    assert ids(group) == ["approval-1-1"]
    assert ids({"request_id": "timer-3-0", "kind": "timer"}) == []
    assert ids({**one, "resolved": True}) == []
