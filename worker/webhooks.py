"""Webhook delivery from the Postgres outbox (the ``webhooks`` table, store/schema.py).

A workflow node's webhook row is written in the transaction that admits its turn, so
nothing has to happen at the moment the turn settles for its completion to be
delivered: whichever statement settles the turn (a worker's step, a cancellation, an
interrupt) and whatever crashes right after, the row is there, undelivered and due.

Two ways in, one path:

- ``deliver_turn``: the prompt delivery. A worker whose settling step said the turn has
  an undelivered webhook sends ``turnkeep.deliver_webhooks(tenant, session, turn)``
  right after its commit; this claims that one row.
- ``deliver_due``: beat's pass every ``TURNKEEP_WEBHOOK_INTERVAL`` seconds (and once at
  a worker's start-up), the safety net: a keyset walk over every undelivered, due
  webhook, claiming those whose turn is terminal, a bounded page at a time.

A claim counts an attempt and holds the row for ``Settings.webhooks.lease`` seconds
(``next_attempt_at`` moves on), so a deliverer killed before, during or after its POST
leaves the row due again once that runs out: at least once, with the same delivery
id on every attempt. A 2xx marks it delivered; anything else schedules the next
attempt with capped exponential backoff (``turnkeep.runtime.webhooks.retry_delay``), recorded
only by the newest claim's holder. The claimed rows of one page are posted in
parallel, each POST bounded by ``TURNKEEP_WEBHOOK_TIMEOUT`` per phase; redirects are
not followed (a 3xx is a failed attempt) and the response body is never read.

A chat bridge's reply (a row with a ``connector``) takes the same path, claimed,
retried and recorded alike; only the attempt differs: worker/replies.py posts it to
the provider's API (whose answer's body is read: Slack says ``ok`` there). A bridge
thread's replies (rows with a ``target``, the generic bridge's too) leave in the order
of their turns: a later one is claimed only once the earlier are delivered, and right
after the one before it is.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import httpx

from turnkeep.runtime import webhooks
from turnkeep.runtime.obs.faults import FaultPoint, hit
from turnkeep.runtime.settings import Settings
from turnkeep.store.facade import Store
from turnkeep.store.records import Claimed
from turnkeep.worker import replies

log = logging.getLogger(__name__)

#: pages one beat pass walks at most (the next pass goes on from the start)
MAX_PAGES = 50


@dataclass(frozen=True)
class DeliveryConfig:
    """What delivery needs of the settings."""

    secret: str
    timeout: float
    lease: float
    backoff: float
    backoff_max: float
    batch: int
    #: callbacks may go to loopback and private addresses (TURNKEEP_WEBHOOK_ALLOW_PRIVATE)
    allow_private: bool = False
    #: posts the chat bridges' replies (TURNKEEP_SLACK_BOT_TOKEN; worker/replies.py)
    slack_token: str = ""

    @classmethod
    def from_settings(cls, settings: Settings) -> DeliveryConfig:
        return cls(
            secret=settings.webhooks.secret.get_secret_value(),
            timeout=settings.webhooks.timeout,
            lease=settings.webhooks.lease,
            backoff=settings.webhooks.backoff,
            backoff_max=settings.webhooks.backoff_max,
            batch=settings.webhooks.batch,
            allow_private=settings.webhooks.allow_private,
            slack_token=settings.slack.bot_token.get_secret_value(),
        )


@dataclass(frozen=True)
class DeliveryReport:
    """What one delivery call did: webhooks claimed, acknowledged, failed."""

    claimed: int = 0
    delivered: int = 0
    failed: int = 0

    def __add__(self, other: DeliveryReport) -> DeliveryReport:
        return DeliveryReport(
            self.claimed + other.claimed,
            self.delivered + other.delivered,
            self.failed + other.failed,
        )


def _client(config: DeliveryConfig) -> httpx.Client:
    return httpx.Client(timeout=httpx.Timeout(config.timeout), follow_redirects=False)


def _post(
    http: httpx.Client, claimed: Claimed, secret: str, *, allow_private: bool = False
) -> tuple[int | None, str]:
    """One attempt: (HTTP status or None, why it failed; "" on a 2xx). A URL whose host
    is not a public address is never called, unless the deployment allows it."""
    wh = claimed.webhook
    if not secret:
        return None, "not_configured"
    if not allow_private:
        refused = webhooks.private_target(wh.url)
        if refused is not None:
            return None, refused
    payload = webhooks.body(
        delivery_id=wh.delivery_id,
        run_id=wh.run_id,
        node_id=wh.node_id,
        session_id=wh.session_id,
        turn_id=wh.turn_id,
        state=claimed.state.value,
        result=claimed.result,
        error=claimed.error,
        thread=wh.target,
    )
    headers = {
        "Content-Type": "application/json",
        "User-Agent": "turnkeep-webhooks/1",
        webhooks.DELIVERY_HEADER: wh.delivery_id,
        webhooks.SIGNATURE_HEADER: webhooks.sign(secret, payload),
    }
    try:
        # the status line is the answer: the body is never read (nor waited for)
        with http.stream("POST", wh.url, content=payload, headers=headers) as response:
            status = response.status_code
    except httpx.HTTPError as exc:
        # the error's type only: its text may hold the URL, which may hold a secret
        return None, type(exc).__name__
    return status, "" if 200 <= status < 300 else f"http {status}"


def _attempt(store: Store, http: httpx.Client, claimed: Claimed, config: DeliveryConfig) -> bool:
    """POST one claimed webhook and record the outcome; True when acknowledged."""
    wh = claimed.webhook
    if wh.connector is None and wh.secret_id != webhooks.secret_id(config.secret):
        # admitted under another secret (rotated since): signed with the current one
        log.info("webhook signed with a secret other than the one it was admitted under")
    hit(FaultPoint.BEFORE_DELIVERY)
    # sent under the tombstone's fence: a session deleted meanwhile gets nothing
    with store.outbox.sending(
        wh.tenant_id, wh.session_id, wh.turn_id, claim=wh.claim or ""
    ) as live:
        if not live:
            log.info("webhook not sent: its session was deleted, or it was claimed again")
            return False
        if wh.connector is not None:
            # a chat bridge's reply, to the provider's API an operator configured
            status, error = replies.post_reply(http, claimed, config.slack_token)
        else:
            status, error = _post(http, claimed, config.secret, allow_private=config.allow_private)
    if status is not None and not error:
        hit(FaultPoint.AFTER_DELIVERY)
        store.outbox.webhook_delivered(wh.tenant_id, wh.session_id, wh.turn_id, status=status)
        hit(FaultPoint.AFTER_DELIVERY_RECORDED)
        return True
    delay = webhooks.retry_delay(wh.attempts, base=config.backoff, cap=config.backoff_max)
    assert wh.claim is not None  # a claimed row carries its claim's token
    recorded = store.outbox.webhook_retry(
        wh.tenant_id,
        wh.session_id,
        wh.turn_id,
        claim=wh.claim,
        delay=delay,
        status=status,
        error=error,
    )
    log.info(
        "webhook attempt %d failed (%s); %s",
        wh.attempts,
        error,
        f"next in {delay:.1f}s" if recorded else "claimed again meanwhile",
    )
    return False


def _deliver(store: Store, claimed: list[Claimed], config: DeliveryConfig) -> DeliveryReport:
    """POST the claimed webhooks in parallel (each holds a lease that is running)."""
    if not claimed:
        return DeliveryReport()
    with _client(config) as http, ThreadPoolExecutor(len(claimed)) as pool:
        reports: Iterable[DeliveryReport] = pool.map(
            lambda c: _in_order(store, http, c, config), claimed
        )
        return sum(reports, DeliveryReport())


def _in_order(
    store: Store, http: httpx.Client, claimed: Claimed, config: DeliveryConfig
) -> DeliveryReport:
    """Deliver ``claimed`` and then, while each is delivered, the next reply of its
    bridge thread, which waited for it (worker/replies.py ``next_reply``)."""
    report = DeliveryReport()
    current: Claimed | None = claimed
    while current is not None:
        ok = _safe(store, http, current, config)
        report += DeliveryReport(claimed=1, delivered=int(ok), failed=int(not ok))
        try:
            current = replies.next_reply(store, current.webhook, lease=config.lease) if ok else None
        except Exception as exc:
            # the next reply stays due: beat's pass claims it
            log.warning("a thread's next reply not claimed: %s", type(exc).__name__)
            current = None
    return report


def _safe(store: Store, http: httpx.Client, claimed: Claimed, config: DeliveryConfig) -> bool:
    try:
        return _attempt(store, http, claimed, config)
    except Exception as exc:
        # the outcome was not recorded (Postgres away): the claim's lease runs out and
        # the webhook is due again, with the same delivery id
        log.warning("webhook attempt not recorded: %s", type(exc).__name__)
        return False


#: seconds between two "no secret" lines of the beat's pass (it runs every few seconds)
QUIET_FOR = 600.0
_said_at: float | None = None


def _configured(config: DeliveryConfig, *, turn: bool) -> bool:
    """A secret to sign with (or a chat bridge's token to post with); without either
    nothing is claimed, and every webhook stays due until one is configured (with one
    only, a row that needs the other is a failed attempt, ``not_configured``). Said
    at once for a settled turn's own webhook, at most
    every ``QUIET_FOR`` seconds by the beat's pass (which cannot tell whether any is due
    without claiming it)."""
    global _said_at
    if config.secret or config.slack_token:
        return True
    now = time.monotonic()
    if turn:
        log.error("a webhook is due but TURNKEEP_WEBHOOK_SECRET is not set: not delivered")
    elif _said_at is None or now - _said_at >= QUIET_FOR:
        _said_at = now
        log.error("TURNKEEP_WEBHOOK_SECRET is not set: no webhook is delivered until it is")
    return False


def deliver_turn(
    store: Store, config: DeliveryConfig, tenant_id: str, session_id: str, turn_id: str
) -> DeliveryReport:
    """The prompt delivery of one settled turn's webhook (nothing when it is not due)."""
    if not _configured(config, turn=True):
        return DeliveryReport()
    claimed = store.outbox.claim_webhook(
        tenant_id, session_id, turn_id, claim=uuid.uuid4().hex, lease=config.lease
    )
    return _deliver(store, [] if claimed is None else [claimed], config)


def deliver_due(
    store: Store, config: DeliveryConfig, *, max_pages: int = MAX_PAGES
) -> DeliveryReport:
    """Beat's pass: every undelivered, due webhook of a settled turn, a page at a time."""
    report = DeliveryReport()
    if not _configured(config, turn=False):
        return report
    cursor = None
    for _ in range(max_pages):
        claimed, cursor = store.outbox.claim_webhooks(
            claim=uuid.uuid4().hex, lease=config.lease, limit=config.batch, after=cursor
        )
        report += _deliver(store, claimed, config)
        if cursor is None:
            break
    if report.claimed:
        log.info(
            "webhook pass: %d attempted, %d delivered, %d to retry",
            report.claimed,
            report.delivered,
            report.failed,
        )
    return report
