"""The webhook outbox of workflow nodes: claims and delivery records (the statements
of sql/outbox.sql; worker/webhooks.py delivers). The row itself is written with its
turn, in the admission's transaction (``insert_webhook``, store/turns.py)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime

from turnkeep.runtime.pending import TurnWait
from turnkeep.store.records import Claimed, DuePrompt, WebhookRecord
from turnkeep.store.rows import claimed_record, first, webhook_record
from turnkeep.store.statements import Statements

#: keyset position of the webhook delivery pass: (next_attempt_at, tenant, session, turn)
WebhookCursor = tuple[datetime, str, str, str]


class Outbox(Statements):
    """A settled turn's webhook: claimed under a lease, then delivered or retried."""

    def get_webhook(self, tenant_id: str, session_id: str, turn_id: str) -> WebhookRecord | None:
        row = self._one(
            "get_webhook", {"tenant_id": tenant_id, "session_id": session_id, "turn_id": turn_id}
        )
        return None if row is None else webhook_record(row)

    def claim_webhook(
        self, tenant_id: str, session_id: str, turn_id: str, *, claim: str, lease: float
    ) -> Claimed | None:
        """Claim one settled turn's undelivered, due webhook for ``lease`` seconds under
        the token ``claim`` (one attempt counted); None when there is nothing to do."""
        row = self._one(
            "claim_webhook",
            {
                "tenant_id": tenant_id,
                "session_id": session_id,
                "turn_id": turn_id,
                "claim": claim,
                "lease": lease,
            },
        )
        return None if row is None else claimed_record(row)

    def claim_thread_reply(
        self, tenant_id: str, session_id: str, *, claim: str, lease: float
    ) -> Claimed | None:
        """Claim the next reply of a bridge thread (the session's earliest undelivered
        one), as ``claim_webhook`` claims one; None when it is not due or its turn is
        active (the pass, or its own turn's settle, delivers it then)."""
        row = self._one(
            "claim_thread_reply",
            {"tenant_id": tenant_id, "session_id": session_id, "claim": claim, "lease": lease},
        )
        return None if row is None else claimed_record(row)

    def claim_webhooks(
        self, *, claim: str, lease: float, limit: int, after: WebhookCursor | None = None
    ) -> tuple[list[Claimed], WebhookCursor | None]:
        """One keyset page of undelivered, due webhooks: those of settled turns claimed
        as ``claim_webhook`` claims one; the cursor for the next page (None at the end)."""
        ts, tenant, session, turn = after or (datetime(1970, 1, 1, tzinfo=UTC), "", "", "")
        rows = self._rows(
            "claim_webhooks",
            {
                "claim": claim,
                "lease": lease,
                "limit": limit,
                "after_ts": ts,
                "after_tenant": tenant,
                "after_session": session,
                "after_turn": turn,
            },
        )
        claimed = [claimed_record(r) for r in rows if r["tenant_id"] is not None]
        last = rows[-1] if len(rows) == limit else None
        cursor = (
            None
            if last is None
            else (last["page_at"], last["page_tenant"], last["page_session"], last["page_turn"])
        )
        return claimed, cursor

    def webhook_delivered(
        self, tenant_id: str, session_id: str, turn_id: str, *, status: int
    ) -> bool:
        """Record an acknowledged attempt; False when it was recorded already."""
        row = self._one(
            "webhook_delivered",
            {
                "tenant_id": tenant_id,
                "session_id": session_id,
                "turn_id": turn_id,
                "status": status,
            },
        )
        return row is not None

    def webhook_retry(
        self,
        tenant_id: str,
        session_id: str,
        turn_id: str,
        *,
        claim: str,
        delay: float,
        status: int | None,
        error: str,
    ) -> bool:
        """Record a failed attempt and schedule the next in ``delay`` seconds; False when
        the claim is no longer the newest (or the webhook was delivered meanwhile)."""
        row = self._one(
            "webhook_retry",
            {
                "tenant_id": tenant_id,
                "session_id": session_id,
                "turn_id": turn_id,
                "claim": claim,
                "delay": delay,
                "status": status,
                "error": error,
            },
        )
        return row is not None

    def due_prompts(self, *, limit: int) -> list[DuePrompt]:
        """Bridges' parked turns whose open request their thread was not asked about."""
        rows = self._rows("due_prompts", {"limit": limit})
        return [DuePrompt(webhook_record(r), TurnWait.from_json(r["pending_input"])) for r in rows]

    def prompt_posted(
        self, tenant_id: str, session_id: str, turn_id: str, *, request_id: str
    ) -> None:
        """Record that the thread was asked about ``request_id``."""
        self._one(
            "prompt_posted",
            {
                "tenant_id": tenant_id,
                "session_id": session_id,
                "turn_id": turn_id,
                "request_id": request_id,
            },
        )

    @contextmanager
    def sending(
        self, tenant_id: str, session_id: str, turn_id: str, *, claim: str
    ) -> Iterator[bool]:
        """Whether the claimed delivery may leave, held for the block's length: the
        session lives and the claim is still this one's (``hold_delivery``). Its share
        lock on the session row makes a DELETE's tombstone wait for a send under way
        (at most the POST's timeout), and a send after the tombstone find it: nothing
        leaves once a DELETE has answered (docs/erasure.md)."""
        params = {
            "tenant_id": tenant_id,
            "session_id": session_id,
            "turn_id": turn_id,
            "claim": claim,
        }
        with self.connector.transaction(tenant_id) as tx:
            yield first(tx.rows("hold_delivery", params)) is not None
