"""The kit of tests/integration/test_hostile_input.py: the hostile values, a request
with the places they go, how each is sent (URL, header bytes, JSON text), and what
answer the test wants."""

from __future__ import annotations

import base64
import json
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import httpx

from turnkeep.runtime import webhooks
from turnkeep.runtime.bridges import generic, slack

SECRET = "hostile-s3cret"
MCP_PROTOCOL = "2025-11-25"


@dataclass(frozen=True)
class Hostile:
    name: str
    text: str | None  # None: a lone surrogate, which no Python str sends as UTF-8

    def url(self) -> str:
        return "%ED%A0%80" if self.text is None else quote(self.text, safe="")

    def json(self) -> str:
        return '"\\ud800"' if self.text is None else json.dumps(self.text)

    def header(self) -> bytes | None:
        if self.text is None:
            return b"\xed\xa0\x80"
        return None if "\x00" in self.text else self.text.encode()


HOSTILE = [
    Hostile("superscript-two", "²"),
    Hostile("arabic-indic-three", "\u0663"),
    Hostile("arabic-indic-number", "\u0661\u0667\u0660\u0660"),
    Hostile("full-width-digits", "\uff11\uff12"),
    Hostile("nul", "a\x00b"),
    Hostile("lone-surrogate", None),
    Hostile("rtl-override", "\u202egnp.exe"),
    Hostile("combining-marks", "e" + "\u0301" * 300),
    Hostile("very-long", "9" * 6000),
]

#: in a JSON template, the place of the hostile value
X = "\u00a7HOSTILE\u00a7"
#: a query value: a listing's cursor whose row id is the hostile value
CURSOR = "\u00a7CURSOR\u00a7"


@dataclass
class Req:
    """One request; ``x`` in ``path``/``params``/``headers`` is the hostile value's place."""

    method: str
    path: str
    params: dict[str, str] = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)
    body: Any = None
    #: a read whose filter takes any text: 200 allowed
    filter: bool = False
    #: a JSON-RPC surface (MCP, A2A): an error object, never an internal one
    rpc: bool = False
    #: sent without the bearer token (a stream token stands for it)
    anonymous: bool = False
    #: sign the body as the bridge does (slack / generic), with the hostile timestamp
    sign: str | None = None


def _body(template: Any, x: Hostile) -> bytes:
    return json.dumps(template).replace(json.dumps(X), x.json()).encode()


def send(clients: dict[bool, httpx.Client], r: Req, x: Hostile) -> httpx.Response | None:
    c = clients[r.anonymous]
    path = r.path.replace("{x}", x.url())
    query = "&".join(f"{quote(k)}={_param(v, x)}" for k, v in r.params.items())
    url = path + ("?" + query if query else "")
    headers: dict[str, str | bytes] = {"Content-Type": "application/json"}
    for k, v in r.headers.items():
        if v != X:
            headers[k] = v
            continue
        raw = x.header()
        if raw is None:
            return None  # no HTTP client sends a NUL in a header
        headers[k] = raw
    content = None if r.body is None else _body(r.body, x)
    if r.sign == "slack":
        stamp = x.header()
        if stamp is None:
            return None
        headers[slack.TIMESTAMP_HEADER] = stamp
        signed = slack.signature(SECRET, stamp.decode("utf-8", "replace"), content or b"")
        headers[slack.SIGNATURE_HEADER] = signed
    if r.sign == "generic":
        mac = webhooks.sign(SECRET, content or b"", at=int(time.time()))
        v1 = mac.partition("v1=")[2]
        raw = x.header()
        if raw is None:
            return None
        headers[generic.SIGNATURE_HEADER] = b"t=" + raw + b",v1=" + v1.encode()
    return c.request(r.method, url, content=content, headers=headers)


def _param(value: str, x: Hostile) -> str:
    """A query value with the hostile one in place of ``X``; in a listing's cursor
    (``CURSOR``: base64 of a time and a row id), as the row id."""
    if value == CURSOR:
        raw = b"2026-01-01T00:00:00+00:00|" + (x.header() or x.text.encode())  # type: ignore[union-attr]
        return base64.urlsafe_b64encode(raw).decode().rstrip("=")
    head, sep, tail = value.partition(X)
    return quote(head, safe="") + (x.url() if sep else "") + quote(tail, safe="")


def judge(r: Req, x: Hostile, resp: httpx.Response) -> str | None:
    """What is wrong with the answer; None when it is what the test wants."""
    where = f"{r.method} {r.path} {sorted(r.params)} {sorted(r.headers)} [{x.name}]"
    if resp.status_code >= 500:
        return f"{where}: {resp.status_code} {resp.text[:200]}"
    if r.rpc:
        if resp.status_code >= 400 and "code" in resp.json():  # a problem (401, 404)
            return None
        err = _rpc_error(resp)
        if err is None or err.get("code") == -32603:
            return f"{where}: not a typed JSON-RPC error: {resp.text[:300]}"
        return None
    if r.filter and resp.status_code == 200:
        return None
    if not 400 <= resp.status_code < 500:
        return f"{where}: {resp.status_code}, not a 4xx: {resp.text[:200]}"
    if not resp.headers.get("content-type", "").startswith("application/problem+json"):
        return f"{where}: {resp.status_code} is not problem+json: {resp.text[:200]}"
    if not resp.json().get("code"):
        return f"{where}: no code: {resp.text[:200]}"
    return None


def _rpc_error(resp: httpx.Response) -> dict[str, Any] | None:
    text = resp.text
    if resp.headers.get("content-type", "").startswith("text/event-stream"):
        text = "".join(line[5:] for line in text.splitlines() if line.startswith("data:"))
    answer = json.loads(text)
    if "error" in answer:
        return dict(answer["error"])
    result = answer.get("result") or {}
    if result.get("isError"):  # an MCP tool's error: its text names the code
        return {"code": "tool_error", "text": result["content"][0]["text"]}
    return None
