"""Hostile Unicode at every route family (issue 37): digits of other scripts ("²",
Arabic-Indic, full-width), NUL, a lone surrogate (as a JSON escape; as bytes that are
not UTF-8 in a URL or header), the right-to-left override, combining marks and very
long strings, in path params, query params, headers and bodies. Each answer is a typed
4xx (problem+json with a ``code``; a JSON-RPC error that is not an internal one for MCP
and A2A), never a 500, and nothing is written. A listing's free-text filter may answer
200 (an empty page: "²" is a name nobody has), never 5xx.

Found by it on 6618366 (each fixed since): a Slack timestamp or a generic bridge
signature time of Latin-1 "²" (the byte 0xB2), or of 6,000 digits, was a 500 or a
dropped connection (``isdigit`` then ``int``); a search cursor whose row id is "²" a
500, and one whose row id holds a NUL a dropped connection (Postgres refuses NUL); A2A's
ListTasks with a page token "²", or a contextId holding a NUL, an internal error; the
inbox's and a session's turns-page cursors past a bigint were read (200), now 422.
"""

from __future__ import annotations

import base64
import time
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import psycopg
import pytest

from tests.integration.api_server import Api, serve_api
from tests.integration.hostile import (
    CURSOR,
    HOSTILE,
    MCP_PROTOCOL,
    SECRET,
    Req,
    X,
    judge,
    send,
)
from turnkeep.runtime import webhooks
from turnkeep.runtime.bridges import generic, slack


@pytest.fixture(scope="module")
def api(service_env: dict[str, str]) -> Iterator[Api]:
    with serve_api(
        service_env,
        slack_signing_secret=SECRET,
        bridge_secret=SECRET,
        stream_token_secret=SECRET,
        max_body_bytes=64 * 1024,
    ) as handle:
        yield handle


@pytest.fixture(scope="module")
def world(api: Api) -> dict[str, str]:
    """A real session with a queued turn, so a hostile value meets a route past its lookups."""
    c = api.client()
    sid = f"h-{uuid.uuid4().hex[:8]}"
    r = c.post(
        f"/v1/sessions/{sid}/turns",
        json={"agent": "demo", "input": [{"role": "user", "content": "hi"}]},
        headers={"Idempotency-Key": "t-1"},
    )
    assert r.status_code == 202, r.text
    return {"sid": sid, "tid": "t-1"}


def _cursor(row_id: str) -> str:
    raw = f"2026-01-01T00:00:00+00:00|{row_id}".encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


TURN = {"agent": "demo", "input": [{"role": "user", "content": "hi"}]}


def families(w: dict[str, str]) -> dict[str, list[Req]]:
    s, t = w["sid"], w["tid"]
    return {
        "sessions": [
            Req("GET", "/v1/sessions/{x}"),
            Req("DELETE", "/v1/sessions/{x}"),
            Req("GET", f"/v1/sessions/{s}/messages", {"after": X}),
            Req("GET", f"/v1/sessions/{s}/messages", {"limit": X}),
            Req("GET", "/v1/sessions", {"after": X}),
            Req("GET", "/v1/sessions", {"limit": X}),
            Req("GET", "/v1/sessions", {"created_since": X}),
            Req("GET", "/v1/sessions", {"state": X}),
            Req("GET", "/v1/sessions", {"agent": X}, filter=True),
            Req("POST", f"/v1/sessions/{s}/fork", body={"at_seq": X}),
            Req("POST", f"/v1/sessions/{s}/fork", body={"at_seq": 1, "session_id": X}),
            Req("POST", f"/v1/sessions/{s}/fork", {}, {"Idempotency-Key": X}, {"at_seq": 1}),
        ],
        "turns": [
            Req("POST", "/v1/sessions/{x}/turns", body=TURN),
            Req("POST", f"/v1/sessions/{s}/turns", headers={"Idempotency-Key": X}, body=TURN),
            Req("POST", f"/v1/sessions/{s}/turns", body={**TURN, "agent": X}),
            Req("POST", f"/v1/sessions/{s}/turns", body={**TURN, "priority": X}),
            Req(
                "POST",
                f"/v1/sessions/{s}/turns",
                body={**TURN, "input": [{"role": X, "content": "hi"}]},
            ),
            Req("GET", f"/v1/sessions/{s}/turns", {"after": X}),
            Req("GET", f"/v1/sessions/{s}/turns", {"limit": X}),
            Req("GET", f"/v1/sessions/{s}/turns/{{x}}"),
            Req("GET", f"/v1/sessions/{s}/turns/{t}", {"wait": X}),
            Req("GET", f"/v1/sessions/{s}/turns/{{x}}/timeline"),
            Req("POST", f"/v1/sessions/{s}/turns/{{x}}/cancel"),
            Req("POST", f"/v1/sessions/{s}/turns/{{x}}/rerun", body={}),
            Req("POST", f"/v1/sessions/{s}/turns/{t}/feedback", body={"thumbs": X}),
        ],
        "events": [
            Req("GET", f"/v1/sessions/{s}/events", {"after": X}, {"Accept": "application/json"}),
            Req("GET", f"/v1/sessions/{s}/events", {"limit": X}, {"Accept": "application/json"}),
            Req("GET", f"/v1/sessions/{s}/events", {}, {"Last-Event-ID": X}),
            Req("GET", f"/v1/sessions/{s}/events", {"stream_token": X}, anonymous=True),
            Req("GET", "/v1/sessions/{x}/events", {}, {"Accept": "application/json"}),
            Req("POST", "/v1/sessions/{x}/stream-tokens"),
        ],
        "inputs": [
            Req("GET", "/v1/inbox", {"after": X}),
            Req("GET", "/v1/inbox", {"after": f"{X}.{s}"}),
            Req("GET", "/v1/inbox", {"state": X}),
            Req("GET", "/v1/inbox", {"limit": X}),
            Req("POST", f"/v1/sessions/{s}/turns/{t}/inputs/{{x}}", body={"approved": True}),
            Req("POST", f"/v1/sessions/{s}/turns/{t}/inputs", body={"answers": X}),
        ],
        "search": [
            Req("GET", "/v1/turns", {"after": X}),
            Req("GET", "/v1/turns", {"after": CURSOR}),
            Req("GET", "/v1/sessions", {"after": CURSOR}),
            Req("GET", "/v1/projects", {"after": CURSOR}),
            Req("GET", "/v1/turns", {"limit": X}),
            Req("GET", "/v1/turns", {"created_since": X}),
            Req("GET", "/v1/turns", {"state": X}),
            Req("GET", "/v1/turns", {"metadata": X}),
            Req("GET", "/v1/turns", {"agent": X}, filter=True),
            Req("GET", "/v1/turns", {"error": X}, filter=True),
        ],
        "schedules": [
            Req("POST", "/v1/schedules", body={**TURN, "cron": X}),
            Req("POST", "/v1/schedules", body={**TURN, "cron": "0 7 * * *", "timezone": X}),
            Req("POST", "/v1/schedules", body={**TURN, "every_seconds": X}),
            Req("POST", "/v1/schedules", body={**TURN, "at": X}),
            Req("POST", "/v1/schedules", body={**TURN, "every_seconds": 60, "schedule_id": X}),
            Req("POST", "/v1/schedules", body={**TURN, "every_seconds": 60, "missed": X}),
            Req(
                "POST",
                "/v1/schedules",
                headers={"Idempotency-Key": X},
                body={**TURN, "every_seconds": 60},
            ),
            Req("GET", "/v1/schedules", {"after": X}, filter=True),
            Req("GET", "/v1/schedules", {"limit": X}),
            Req("GET", "/v1/schedules/{x}"),
            Req("DELETE", "/v1/schedules/{x}"),
            Req("POST", "/v1/schedules/{x}/pause"),
            Req("POST", "/v1/schedules/{x}/resume"),
        ],
        "datasets": [
            Req("POST", "/v1/datasets/{x}/versions", body={"cases": []}),
            Req("POST", "/v1/datasets/d1/versions", body={"cases": [{"input": X}]}),
            Req("POST", "/v1/datasets/{x}/cases", body={"session_id": s, "turn_id": t}),
            Req("GET", "/v1/datasets/{x}"),
            Req("GET", "/v1/datasets/d1/versions/{x}"),
            Req("POST", "/v1/experiments", body={"dataset": X, "agent": "demo"}),
            Req(
                "POST",
                "/v1/experiments",
                body={"dataset": "d1", "agent": "demo", "dataset_version": X},
            ),
            Req("GET", "/v1/experiments/{x}"),
            Req("POST", "/v1/experiments/{x}/cancel"),
            Req("GET", "/v1/experiments/{x}/compare/{x}"),
            Req("GET", "/v1/experiments", {"limit": X}),
            Req("GET", "/v1/experiments", {"dataset": X}, filter=True),
            Req("POST", "/v1/agents/{x}/versions/1/promote"),
            Req("GET", "/v1/agents/{x}/versions"),
        ],
        "bridges": [
            Req("POST", "/v1/bridges/bindings", body={"bridge": X}),
            Req(
                "POST",
                "/v1/bridges/bindings",
                body={"bridge": "slack", "workspace": X, "channel": "C1", "user": "U1", "as": "z"},
            ),
            Req("DELETE", "/v1/bridges/bindings/{x}"),
            Req("POST", "/bridges/slack/events", body={"type": "event_callback"}, sign="slack"),
            Req("POST", "/bridges/generic/messages", body={"text": "hi"}, sign="generic"),
        ],
        "limits": [
            Req("PUT", "/v1/limits", body={"max_running": X}),
        ],
        "projects": [
            Req("POST", "/v1/projects", body={"name": X}),
            Req("POST", "/v1/projects", headers={"Idempotency-Key": X}, body={"name": "p"}),
            Req("GET", "/v1/projects", {"after": X}),
            Req("GET", "/v1/projects", {"limit": X}),
            Req("GET", "/v1/projects/{x}"),
            Req("PATCH", "/v1/projects/{x}", body={"name": "p"}),
        ],
        "attachments": [
            Req("POST", "/v1/sessions/{x}/attachments", body={"name": "a.txt", "data": "aGk="}),
            Req("POST", f"/v1/sessions/{s}/attachments", body={"name": X, "data": "aGk="}),
            Req("POST", f"/v1/sessions/{s}/attachments", body={"name": "a.txt", "data": X}),
            Req("GET", f"/v1/sessions/{s}/attachments/{{x}}"),
            Req("GET", f"/v1/sessions/{s}/attachments/{{x}}/content"),
            Req("DELETE", f"/v1/sessions/{s}/attachments/{{x}}"),
        ],
        "workflows": [
            Req("POST", "/v1/workflows/{x}/nodes/n1/turns", body=TURN),
            Req("POST", "/v1/workflows/r1/nodes/{x}/turns", body=TURN),
            Req("POST", "/v1/workflows/r1/nodes/n1/turns", body={**TURN, "agent": X}),
            Req("GET", "/v1/workflows/{x}/nodes/n1"),
            Req("GET", "/v1/workflows/r1/nodes/n1", {"wait": X}),
        ],
        "a2a": [
            _a2a("ListTasks", {"contextId": s, "pageToken": X}),
            _a2a("ListTasks", {"contextId": X}),
            _a2a("GetTask", {"id": X}),
            _a2a("CancelTask", {"id": X}),
            _a2a(
                "SendMessage",
                {"message": {"messageId": X, "contextId": X, "role": "ROLE_USER", "parts": []}},
            ),
            Req("POST", "/a2a/{x}", body={"jsonrpc": "2.0", "id": 1, "method": "GetTask"}),
        ],
    }


def _mcp_tool(session: str, name: str, arguments: dict[str, Any]) -> Req:
    body = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }
    headers = {
        "Accept": "application/json, text/event-stream",
        "Mcp-Session-Id": session,
        "Mcp-Protocol-Version": MCP_PROTOCOL,
    }
    return Req("POST", "/mcp", headers=headers, body=body, rpc=True)


def mcp(c: httpx.Client, w: dict[str, str]) -> list[Req]:
    """The MCP tools, over a raw Streamable HTTP session."""
    accept = {"Accept": "application/json, text/event-stream"}
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": MCP_PROTOCOL,
            "capabilities": {},
            "clientInfo": {"name": "h"},
        },
    }
    r = c.post("/mcp", json=init, headers=accept)
    assert r.status_code == 200, r.text
    session = r.headers["mcp-session-id"]
    done = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    headers = {**accept, "Mcp-Session-Id": session, "Mcp-Protocol-Version": MCP_PROTOCOL}
    assert c.post("/mcp", json=done, headers=headers).status_code == 202
    s, t = w["sid"], w["tid"]
    return [
        _mcp_tool(session, "demo", {"prompt": "hi", "session_id": X}),
        _mcp_tool(session, "demo", {"prompt": X, "session_id": s, "turn_id": X}),
        _mcp_tool(session, "turnkeep_status", {"session_id": X, "turn_id": t}),
        _mcp_tool(session, "turnkeep_status", {"session_id": s, "turn_id": X}),
        _mcp_tool(session, "turnkeep_cancel", {"session_id": s, "turn_id": X}),
        _mcp_tool(session, "turnkeep_answer", {"session_id": s, "turn_id": t, "request_id": X}),
        _mcp_tool(session, X, {"prompt": "hi"}),
    ]


def _a2a(method: str, params: dict[str, Any]) -> Req:
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    return Req("POST", "/a2a/demo", headers={"A2A-Version": "1.0"}, body=body, rpc=True)


def _written(database_url: str, tenants: list[str]) -> dict[str, int]:
    """Rows of the tenants in every table that has a tenant_id."""
    counts: dict[str, int] = {}
    with psycopg.connect(database_url.replace("+psycopg", "")) as conn:
        tables = conn.execute(
            "SELECT table_name FROM information_schema.columns WHERE column_name = 'tenant_id' "
            "AND table_schema = 'public' ORDER BY table_name"
        ).fetchall()
        for (table,) in tables:
            q = f'SELECT count(*) FROM "{table}" WHERE tenant_id = ANY(%s)'
            counts[table] = conn.execute(q, (tenants,)).fetchone()[0]  # type: ignore[index]
    return counts


FAMILIES = [
    "sessions",
    "turns",
    "events",
    "inputs",
    "search",
    "schedules",
    "datasets",
    "bridges",
    "limits",
    "projects",
    "attachments",
    "workflows",
    "a2a",
    "mcp",
]


@pytest.mark.parametrize("family", FAMILIES)
def test_hostile_unicode_is_a_typed_4xx_and_writes_nothing(
    api: Api, world: dict[str, str], database_url: str, family: str
) -> None:
    c = api.client()
    clients = {False: c, True: api.client(None)}
    before = _written(database_url, [api.tenant_a, api.tenant_b])
    wrong: list[str] = []
    sent = 0
    reqs = mcp(c, world) if family == "mcp" else families(world)[family]
    for r in reqs:
        for x in HOSTILE:
            try:
                resp = send(clients, r, x)
            except httpx.TransportError as exc:  # the server dropped it: an unhandled error
                wrong.append(f"{r.method} {r.path} [{x.name}]: {type(exc).__name__}")
                continue
            if resp is None:
                continue
            sent += 1
            problem = judge(r, x, resp)
            if problem is not None:
                wrong.append(problem)
    assert not wrong, "\n".join(wrong)
    assert sent >= 9
    assert _written(database_url, [api.tenant_a, api.tenant_b]) == before


#: what ``str.isdigit`` passed and ``int`` (or a bigint) could not take
DIGITS = ["²", "\u0663", "\uff11", "9" * 40]


def _invalid(r: httpx.Response) -> None:
    assert r.status_code == 422 and r.json()["code"] == "validation_error", r.text


def test_a_search_cursor_of_unicode_digits_is_a_typed_422(api: Api) -> None:
    """Item 10: the cursor decodes, but its row id "²" passed ``isdigit`` and ``int``
    raised: a 500."""
    for digits in DIGITS:
        _invalid(api.client().get("/v1/turns", params={"after": _cursor(digits)}))


def test_a_turns_page_cursor_past_a_bigint_is_a_typed_422(api: Api, world: dict[str, str]) -> None:
    """Forty ASCII digits passed ``isdigit`` and Python, then Postgres' bigint: a 500."""
    for digits in ("9" * 19, "9" * 40):
        r = api.client().get(f"/v1/sessions/{world['sid']}/turns", params={"after": digits})
        _invalid(r)


def test_an_inbox_cursor_of_unicode_digits_is_a_typed_422(api: Api, world: dict[str, str]) -> None:
    for digits in DIGITS:
        _invalid(api.client().get("/v1/inbox", params={"after": f"{digits}.{world['sid']}"}))


def test_a_bridge_timestamp_of_unicode_digits_is_a_clean_401(api: Api) -> None:
    """A header is read as Latin-1: the byte 0xB2 is "²", which ``isdigit`` passed and
    ``int`` refused, an unhandled error (the connection dropped) on both bridges."""
    body = b'{"type": "event_callback"}'
    for stamp in (b"\xb2", b"1\xb9", b"\xb3" * 10):
        text = stamp.decode("latin-1")
        headers = {
            slack.TIMESTAMP_HEADER: stamp,
            slack.SIGNATURE_HEADER: slack.signature(SECRET, text, body).encode(),
        }
        r = httpx.post(f"{api.url}/bridges/slack/events", content=body, headers=headers)
        assert r.status_code == 401 and r.json()["code"], r.text
        mac = webhooks.sign(SECRET, body, at=int(time.time())).partition("v1=")[2]
        signed = b"t=" + stamp + b",v1=" + mac.encode()
        r = httpx.post(
            f"{api.url}/bridges/generic/messages",
            content=body,
            headers={generic.SIGNATURE_HEADER: signed},
        )
        assert r.status_code == 401 and r.json()["code"], r.text


def test_an_a2a_page_token_of_unicode_digits_is_invalid_params(
    api: Api, world: dict[str, str]
) -> None:
    """A2A's ListTasks read its page token with ``isdigit`` then ``int``: "²" raised
    inside the handler (an internal error)."""
    c = api.client()

    def listed(token: str) -> dict[str, Any]:
        params = {"contextId": world["sid"], "pageToken": token}
        body = {"jsonrpc": "2.0", "id": 1, "method": "ListTasks", "params": params}
        r = c.post("/a2a/demo", json=body, headers={"A2A-Version": "1.0"})
        assert r.status_code < 500, r.text
        return dict(r.json())

    assert listed("")["result"]["tasks"] == []  # its turn came over HTTP: no A2A task
    for token in DIGITS:
        assert listed(token)["error"]["code"] == -32602, token  # invalid params
