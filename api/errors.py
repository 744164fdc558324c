"""Errors of the service (api/service/) that are not the store's. They share the
store's root, ``StoreError``, so every surface translates one root at its edge."""

from __future__ import annotations

from store.errors import StoreError


class InvalidKey(StoreError):
    """Raised when an idempotency key (a turn id) is not ``[A-Za-z0-9._-]{1,128}``."""

    code = "invalid_idempotency_key"


class WebhookNotConfigured(StoreError):
    """Raised when a workflow node names a ``callback_url`` but no webhook signing
    secret (``TURNKEEP_WEBHOOK_SECRET``) is configured: nothing is admitted."""

    code = "webhook_not_configured"


class ForbiddenRole(StoreError):
    """Raised when a principal whose role may only read (``reader``) asks for a write:
    an admission, a cancellation or an answer. Nothing is looked up or written."""

    code = "forbidden_role"


class RequestInvalid(StoreError):
    """Raised when a request passes a bound of the settings (a message's length, the
    output schema's size or depth) or its output schema is no JSON Schema; ``where``
    names the field (``body.input.0.content``)."""

    code = "validation_error"

    def __init__(self, where: str, message: str) -> None:
        super().__init__(f"invalid field(s): {where}")
        self.where = where
        self.message = message


class AnswerInvalid(RequestInvalid):
    """Raised when an answer does not match its request's bound response schema."""
