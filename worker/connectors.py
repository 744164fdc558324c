"""The connector actions of chat bridges: a settled turn's reply posted into its
thread, from the webhook outbox (worker/webhooks.py claims the row, retries it with
backoff and records it; this posts it). docs/bridges.md.

Exactly once at the far end, on top of the outbox's at least once: every attempt of
a row carries its delivery id in the message's metadata, and an attempt after the
first asks Slack first whether the thread already holds that message (an earlier
attempt may have posted it and died before it was recorded). When Slack cannot say,
the attempt fails and is retried later rather than risk a second post.
"""

from __future__ import annotations

import httpx

from runtime.bridges import SLACK, Thread, reply_text, slack, slack_api
from store.records import Claimed


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
