"""Signed webhooks: what one delivery of a settled workflow node looks like on the wire.

A delivery is one ``POST`` of a JSON body to the node's ``callback_url``::

    Content-Type: application/json
    Turnkeep-Delivery: dlv_3f2a…            the same on every attempt: dedupe by it
    Turnkeep-Signature: t=1767225600,v1=5d41…

    {"delivery_id": …, "run_id": …, "node_id": …, "session_id": …, "turn_id": …,
     "state": "completed" | "failed" | "cancelled", "result": …, "error": …}

``v1`` is the hex HMAC-SHA256 of ``f"{t}.{body}"`` under ``TURNKEEP_WEBHOOK_SECRET``,
``t`` the attempt's Unix time: a receiver recomputes it over the raw body (``verify``)
and refuses a ``t`` too far from its clock, so a captured request cannot be replayed
later. Delivery is at least once: a receiver acknowledges with any 2xx, and anything
else (an error status, a redirect, a timeout, a cut connection) is retried with
capped exponential backoff. The body never names the tenant.

Pure functions; the POST itself is worker/webhooks.py's.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import json
import random
import socket
import time
import uuid
from typing import Any
from urllib.parse import urlsplit

from turnkeep.runtime.numerals import ascii_int

SIGNATURE_HEADER = "Turnkeep-Signature"
DELIVERY_HEADER = "Turnkeep-Delivery"
#: seconds a receiver's ``verify`` accepts between ``t`` and its clock by default
TOLERANCE = 300.0
#: the longest callback URL admitted
MAX_URL = 2048


def check_url(url: str) -> str:
    """``url`` when it is an absolute http(s) URL with a host; ValueError otherwise."""
    if len(url) > MAX_URL:
        raise ValueError(f"must be at most {MAX_URL} characters")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError("must be an absolute http:// or https:// URL")
    if parts.username is not None or parts.password is not None:
        raise ValueError("must not carry credentials")
    if any(c.isspace() or ord(c) < 32 for c in url):
        raise ValueError("must not contain whitespace or control characters")
    return url


def new_delivery_id() -> str:
    """A delivery's id, chosen once at admission and sent with every attempt."""
    return f"dlv_{uuid.uuid4().hex}"


def secret_id(secret: str) -> str:
    """A short public name of the signing secret (recorded with each webhook, so an
    operator can tell which key a delivery was admitted under after a rotation).
    Secrets should be long and random: this, like any function of them, lets a weak
    one be guessed offline."""
    return hmac.new(secret.encode(), b"turnkeep.webhook.secret-id", hashlib.sha256).hexdigest()[:12]


def private_target(url: str) -> str | None:
    """Why a callback to ``url`` must not be sent: its host is, or resolves to, an
    address that is not global (loopback, private, link-local, carrier-grade NAT,
    reserved, multicast); None when every address it resolves to is public. Checked at
    each attempt, before the request; a name that resolves to a public address when
    checked and another when connected to (DNS rebinding) is not caught here:
    restrict the workers' egress too where that matters."""
    host = urlsplit(url).hostname or ""
    try:
        infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
    except (OSError, UnicodeError):
        return "unresolvable"
    for info in infos:
        address = ipaddress.ip_address(str(info[4][0]).split("%", 1)[0])
        if not address.is_global or address.is_multicast:
            return "private_address"
    return None


def body(
    *,
    delivery_id: str,
    run_id: str,
    node_id: str,
    session_id: str,
    turn_id: str,
    state: str,
    result: Any,
    error: Any,
    thread: dict[str, Any] | None = None,
) -> bytes:
    """The exact bytes that are signed and sent (compact JSON, UTF-8). A generic chat
    bridge's reply (runtime/bridges/generic.py) also names its ``thread``."""
    extra = {} if thread is None else {"thread": thread}
    return json.dumps(
        {
            "delivery_id": delivery_id,
            # a turn's own callback answers no workflow node: null, not ""
            "run_id": run_id or None,
            "node_id": node_id or None,
            "session_id": session_id,
            "turn_id": turn_id,
            "state": state,
            "result": result,
            "error": error,
            **extra,
        },
        separators=(",", ":"),
        ensure_ascii=False,
    ).encode("utf-8")


def _mac(secret: str, payload: bytes, at: int) -> str:
    return hmac.new(secret.encode(), f"{at}.".encode() + payload, hashlib.sha256).hexdigest()


def sign(secret: str, payload: bytes, *, at: int | None = None) -> str:
    """The ``Turnkeep-Signature`` value for ``payload`` sent at Unix time ``at``."""
    t = int(time.time()) if at is None else at
    return f"t={t},v1={_mac(secret, payload, t)}"


def verify(
    secret: str,
    payload: bytes,
    header: str,
    *,
    tolerance: float = TOLERANCE,
    now: float | None = None,
) -> bool:
    """Whether ``header`` signs ``payload`` (the raw body) under ``secret`` and its time
    is within ``tolerance`` seconds of ``now``. For receivers (and the tests)."""
    fields: dict[str, list[str]] = {}
    for part in header.split(","):
        key, sep, value = part.strip().partition("=")
        if sep:
            fields.setdefault(key, []).append(value)
    stamps = fields.get("t", [])
    at = ascii_int(stamps[0]) if len(stamps) == 1 else None
    if at is None:
        return False
    if abs((time.time() if now is None else now) - at) > tolerance:
        return False
    expected = _mac(secret, payload, at)
    return any(hmac.compare_digest(expected, v) for v in fields.get("v1", []))


def retry_delay(attempts: int, *, base: float, cap: float) -> float:
    """Seconds before the next attempt after ``attempts`` failed ones: ``base`` doubling
    per attempt, capped, with ±20% jitter so receivers that came back are not hit by
    every retry at once."""
    delay = min(cap, base * 2.0 ** min(max(attempts - 1, 0), 32))
    return float(min(cap, delay * random.uniform(0.8, 1.2)))
