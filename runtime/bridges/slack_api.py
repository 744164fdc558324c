"""The Slack Web API methods turnkeep calls, over a caller's ``httpx.Client``:
``chat.postMessage`` (a reply or an approval prompt in a thread),
``conversations.replies`` (did an earlier attempt post it?), ``chat.update`` (an
answered prompt loses its buttons) and ``chat.postEphemeral`` (a refusal only its
addressee sees). The bot token goes in the ``Authorization``
header and nowhere else: never in a log line, an error's text or a Celery message.

Slack answers most failures with HTTP 200 and ``{"ok": false, "error": "..."}``: the
body is read, and only ``ok: true`` is a success.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import httpx

from turnkeep.runtime.bridges import slack


@dataclass(frozen=True)
class Answer:
    """What one Web API call came to: HTTP status (None: no answer), whether Slack
    said ``ok``, and why not (Slack's error code or the transport error's type)."""

    status: int | None
    ok: bool
    error: str = ""
    body: dict[str, Any] | None = None


def _call(http: httpx.Client, method: str, url: str, token: str, **kwargs: Any) -> Answer:
    headers = {"Authorization": f"Bearer {token}", "User-Agent": "turnkeep-bridges/1"}
    try:
        response = http.request(method, url, headers=headers, **kwargs)
    except httpx.HTTPError as exc:
        # the type only: the text may hold the URL
        return Answer(None, False, type(exc).__name__)
    if response.status_code != 200:
        return Answer(response.status_code, False, f"http {response.status_code}")
    try:
        body = response.json()
    except ValueError:
        return Answer(200, False, "not json")
    if not isinstance(body, dict):
        return Answer(200, False, "not json")
    if body.get("ok") is not True:
        return Answer(200, False, str(body.get("error") or "not ok"), body)
    return Answer(200, True, "", body)


def post_message(http: httpx.Client, api_url: str, token: str, body: dict[str, Any]) -> Answer:
    return _call(http, "POST", f"{api_url}/chat.postMessage", token, json=body)


def update_message(http: httpx.Client, api_url: str, token: str, body: dict[str, Any]) -> Answer:
    return _call(http, "POST", f"{api_url}/chat.update", token, json=body)


def post_ephemeral(
    http: httpx.Client, api_url: str, token: str, *, channel: str, user: str, thread: str, text: str
) -> Answer:
    body = {"channel": channel, "user": user, "thread_ts": thread, "text": text}
    return _call(http, "POST", f"{api_url}/chat.postEphemeral", token, json=body)


#: pages of ``conversations.replies`` a retry reads at most (each up to 1,000 messages)
MAX_PAGES = 10


def posted(
    http: httpx.Client, api_url: str, token: str, *, channel: str, thread: str, key: str
) -> bool | None:
    """Whether the thread holds turnkeep's message of delivery ``key`` (None: Slack did
    not say, so the caller must not assume either way). A thread longer than
    ``MAX_PAGES`` pages is looked at that far."""
    cursor = ""
    for _ in range(MAX_PAGES):
        params: dict[str, str | int] = {
            "channel": channel,
            "ts": thread,
            "include_all_metadata": "true",
            "limit": 1000,
        }
        if cursor:
            params["cursor"] = cursor
        answer = _call(http, "GET", f"{api_url}/conversations.replies", token, params=params)
        if not answer.ok or answer.body is None:
            return None
        if key in slack.posted_keys(answer.body):
            return True
        cursor = str((answer.body.get("response_metadata") or {}).get("next_cursor") or "")
        if not cursor:
            return False
    return False
