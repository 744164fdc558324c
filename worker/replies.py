"""The chat bridges' replies: a settled turn's reply posted into its
thread, from the webhook outbox (worker/webhooks.py claims the row, retries it with
backoff and records it; this posts it). docs/bridges.md.

Exactly once at the far end, on top of the outbox's at least once: every attempt of
a row carries its delivery id in the message's metadata, and an attempt after the
first asks Slack first whether the thread already holds that message (an earlier
attempt may have posted it and died before it was recorded). When Slack cannot say,
the attempt fails and is retried later rather than risk a second post.

A turn that parks on an input request asks its thread: an approval with two buttons
(api/http/bridges.py takes the press), any other kind in words (it is answered over
the API or CLI). ``prompt_due`` is beat's pass over such turns, after the delivery
pass; each request is asked about once, found in the thread by its key before it is
posted, as a reply is.

A thread's replies leave in the order of its turns: the outbox claims a bridge's
reply only once every earlier turn's reply of its thread is delivered (the guard of
store/sql/outbox.sql's claims), and ``next_reply`` claims the one that waited as soon
as the reply before it is delivered, rather than leave it to beat's next pass.
"""

from __future__ import annotations

import json
import logging
import uuid

import httpx

from turnkeep.runtime.bridges import SLACK, Thread, reply_text, slack, slack_api
from turnkeep.runtime.pending import AskedInput, TurnWait
from turnkeep.store.facade import Store
from turnkeep.store.records import Claimed, WebhookRecord

log = logging.getLogger(__name__)

#: characters of a tool call's arguments a prompt shows
ARGUMENTS_SHOWN = 500


def post_reply(http: httpx.Client, claimed: Claimed, token: str) -> tuple[int | None, str]:
    """One attempt of a bridge's reply: (status or None, why it failed; "" when the
    reply is in the thread, posted now or found posted)."""
    wh = claimed.webhook
    if wh.connector != SLACK or wh.target is None:
        return None, "unknown_connector"
    if not token:
        return None, "not_configured"
    thread = Thread.from_target(wh.target)
    api = wh.url  # the Web API's base, as configured when the turn was admitted
    if wh.attempts > 1:
        found = slack_api.posted(
            http, api, token, channel=thread.channel, thread=thread.thread, key=wh.delivery_id
        )
        if found is None:
            return None, "lookup_failed"
        if found:
            return 200, ""
    text = reply_text(claimed.state.value, claimed.result, claimed.error)
    body = slack.reply_body(thread, text, wh.delivery_id)
    answer = slack_api.post_message(http, api, token, body)
    return answer.status, "" if answer.ok else answer.error


def next_reply(store: Store, delivered: WebhookRecord, *, lease: float) -> Claimed | None:
    """After ``delivered`` (any webhook) was delivered: its bridge thread's next reply,
    claimed for ``lease`` seconds, when there is one due whose turn settled."""
    if delivered.target is None:
        return None  # not a thread's reply: nothing waits on it
    return store.outbox.claim_thread_reply(
        delivered.tenant_id, delivered.session_id, claim=uuid.uuid4().hex, lease=lease
    )


def prompt_text(request: AskedInput) -> str:
    """What the thread is asked: the tool and its arguments for an approval."""
    kind = request.kind
    if kind == "approval":
        tool = (request.tool or {}).get("name", "a tool")
        shown = json.dumps(request.arguments or {}, ensure_ascii=False)
        if len(shown) > ARGUMENTS_SHOWN:
            shown = shown[:ARGUMENTS_SHOWN] + "…"
        bound = request.answered_by
        who = (
            f"Anyone with the {bound['role']} role may answer."
            if "role" in bound and "subject" not in bound
            else "Only the person who asked may answer."
        )
        return f"May I run *{tool}* with `{shown}`? {who}"
    return (
        f"This turn waits for an answer ({kind}, request {request.request_id}): "
        "answer it over the turnkeep API or CLI."
    )


#: kinds of request no person answers (the runtime does): never asked in a thread
UNASKED_KINDS = frozenset({"timer", "delegation"})


def asked(wait: TurnWait) -> list[AskedInput]:
    """The open requests of a turn's wait that a person answers, in call order: the
    one request, or each of a group's (approvals asked together) not answered yet."""
    return [r for r in wait.open_requests() if r.kind not in UNASKED_KINDS]


def _prompt(http: httpx.Client, wh: WebhookRecord, request: AskedInput, token: str) -> bool:
    """Ask the thread about one open request, once: True when it is asked (now, or
    found asked by an earlier pass)."""
    assert wh.target is not None  # a bridge's row names its thread
    thread = Thread.from_target(wh.target)
    rid = request.request_id
    key = f"{wh.delivery_id}.{rid}"
    found = slack_api.posted(
        http, wh.url, token, channel=thread.channel, thread=thread.thread, key=key
    )
    if found is None:
        return False
    if not found:
        text = prompt_text(request)
        if request.kind == "approval":
            body = slack.approval_body(
                thread,
                key=key,
                prompt=text,
                session_id=wh.session_id,
                turn_id=wh.turn_id,
                request_id=rid,
            )
        else:
            body = slack.reply_body(thread, text, key)
        answer = slack_api.post_message(http, wh.url, token, body)
        if not answer.ok:
            log.info("a prompt was not posted (%s); asked again next pass", answer.error)
            return False
    return True


def prompt_due(store: Store, *, token: str, timeout: float, limit: int) -> int:
    """Beat's pass: ask each bridge thread about its turn's open requests (each of a
    group's; none the runtime answers, a timer's); how many were asked. Nothing
    without a bot token (the requests stay open, answerable over the API)."""
    if not token:
        return 0
    done = 0
    due = store.outbox.due_prompts(limit=limit)
    if not due:
        return 0
    with httpx.Client(timeout=httpx.Timeout(timeout), follow_redirects=False) as http:
        for one in due:
            if one.webhook.connector != SLACK:
                continue
            wh = one.webhook
            try:
                requests = asked(one.request)
                if not all(_prompt(http, wh, r, token) for r in requests):
                    continue  # the rest next pass (those asked are found, not reposted)
                rid = one.request.request_id
                store.outbox.prompt_posted(wh.tenant_id, wh.session_id, wh.turn_id, request_id=rid)
                done += len(requests)
            except Exception as exc:
                log.warning("a prompt pass step failed: %s", type(exc).__name__)
    return done
