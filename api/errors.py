"""Errors of the service (api/service/ and the HTTP routes): the ``ServiceError``
branch of the one tree (runtime/errors.py). Each class says when it is raised and
carries its ``code`` and the HTTP ``status`` every edge answers it with; the edges
(api/problems.py for HTTP, MCP, A2A) read them from here. A ``title`` left at None is
the code itself.
"""

from __future__ import annotations

from typing import ClassVar

from turnkeep.runtime.errors import TurnkeepError
from turnkeep.store.errors import Unavailable


class ServiceError(TurnkeepError):
    """Root of every refusal of the service that is not the store's."""

    code = "service_error"
    title: ClassVar[str | None] = None


class InvalidKey(ServiceError):
    """Raised when an idempotency key (a turn id) is not ``[A-Za-z0-9._-]{1,128}``."""

    code = "invalid_idempotency_key"
    status = 400
    title = "Idempotency-Key header is invalid"


class WebhookNotConfigured(ServiceError):
    """Raised when a workflow node names a ``callback_url`` but no webhook signing
    secret (``TURNKEEP_WEBHOOK_SECRET``) is configured: nothing is admitted."""

    code = "webhook_not_configured"
    status = 400
    title = "Webhooks are not configured"
    public = "callback_url needs a webhook signing secret, and none is configured"


class ForbiddenRole(ServiceError):
    """Raised when a principal whose role may only read (``reader``) asks for a write:
    an admission, a cancellation or an answer. Nothing is looked up or written."""

    code = "forbidden_role"
    status = 403
    title = "The principal's role may not do this"
    public = "a reader may not write"


class AdminOnly(ForbiddenRole):
    """Raised when a principal who is not its tenant's admin asks for what only an
    admin may do: declare the tenant's limits, promote a version, upgrade turns,
    manage chat bridges' bindings. Nothing is looked up or written."""

    public = "only a tenant's admin may do this"


class RequestInvalid(ServiceError):
    """Raised when a request passes a bound of the settings (a message's length, the
    output schema's size or depth) or its output schema is no JSON Schema; ``where``
    names the field (``body.input.0.content``)."""

    code = "validation_error"
    status = 422
    title: ClassVar[str | None] = "Request is invalid"

    def __init__(self, where: str, message: str) -> None:
        super().__init__(f"invalid field(s): {where}")
        self.where = where
        self.message = message

    def fields(self) -> dict[str, object]:
        return {"errors": [{"loc": self.where.split("."), "msg": self.message}]}


class AnswerInvalid(RequestInvalid):
    """Raised when an answer does not match its request's bound response schema."""


class AttachmentRefused(RequestInvalid):
    """Raised at admission when the input names an attachment that is not a ``ready``
    one of the turn's session (one subclass per reason): nothing is admitted."""

    def __init__(self, index: int, message: str) -> None:
        super().__init__(f"body.attachments.{index}", message)

    def detail(self) -> str:
        return f"{self.where}: {self.message}"


class AttachmentNotFound(AttachmentRefused):
    """Raised when the input names an attachment the session does not have (or one
    being deleted)."""

    code = "attachment_not_found"
    title = None


class AttachmentPending(AttachmentRefused):
    """Raised when the input names an attachment whose upload has not completed."""

    code = "attachment_not_ready"
    title = None


class CallbackRefused(RequestInvalid):
    """Raised at admission when a ``callback_url``'s host is, or resolves to, an address
    that is not public and the operator does not allow such callbacks
    (``TURNKEEP_WEBHOOK_ALLOW_PRIVATE``): nothing is admitted."""

    code = "callback_not_allowed"
    title = "Callback host is not public"

    def __init__(self) -> None:
        super().__init__(
            "body.callback_url",
            "the host is, or resolves to, a loopback, private, link-local or reserved "
            "address (TURNKEEP_WEBHOOK_ALLOW_PRIVATE allows it)",
        )

    def detail(self) -> str:
        return f"{self.where}: {self.message}"


class ProjectMismatch(ServiceError):
    """Raised at admission when the turn names another project than its session's (or
    none for a project's session, or one for a session in none): nothing is admitted."""

    code = "project_mismatch"
    status = 409
    title = "Session belongs to another project"

    def __init__(self) -> None:
        super().__init__("the turn names another project than its session's")


class AgentNotGated(ServiceError):
    """Raised when ``promote`` names an agent its agents module declares no promotion
    policy for: its default is its latest declared version, nothing to promote."""

    code = "agent_not_gated"
    status = 422
    title = "The agent has no promotion policy"
    public = "the agent declares no promotion policy: its latest version is its default"


class PromotionRefused(ServiceError):
    """Raised when a promotion fails a check of the agent's policy: the refusal is in
    the agent's promotion journal (``seq``), the default is unchanged, and ``failed``
    lists each check that failed (runtime/evaluation/gate.py)."""

    code = "promotion_refused"
    status = 409
    title = "Promotion refused"

    def __init__(self, seq: int, failed: list[dict[str, object]]) -> None:
        names = ", ".join(f"{c['check']} ({c.get('dataset') or '-'})" for c in failed)
        super().__init__(f"the promotion failed: {names}")
        self.seq = seq
        self.failed = failed

    def fields(self) -> dict[str, object]:
        return {"seq": self.seq, "failed": self.failed}


class AttachmentTooLarge(ServiceError):
    """Raised when an uploaded attachment's content is above ``limit`` bytes."""

    code = "attachment_too_large"
    status = 413

    def __init__(self, limit: int) -> None:
        super().__init__(f"the attachment is above {limit} bytes")
        self.limit = limit

    def fields(self) -> dict[str, object]:
        return {"limit": self.limit}


class UnsupportedAttachmentType(ServiceError):
    """Raised when an upload's ``content_type`` is none the service stores."""

    code = "unsupported_attachment_type"
    status = 415


class InvalidCursor(ServiceError):
    """Raised when an event cursor (``Last-Event-ID``, ``?after=``) is no seq."""

    code = "invalid_cursor"
    status = 400
    title = "Event cursor is invalid"


class InvalidJSON(ServiceError):
    """Raised when a request body is not valid JSON."""

    code = "invalid_json"
    status = 400
    title = "Request body is not valid JSON"
    public = "the request body is not valid JSON"


class PayloadTooLarge(ServiceError):
    """Raised when a request body is above ``limit`` bytes (read no further)."""

    code = "payload_too_large"
    status = 413
    title = "Request body is too large"

    def __init__(self, limit: int) -> None:
        super().__init__(f"the request body is above {limit} bytes")
        self.limit = limit


class UploadTooLarge(PayloadTooLarge):
    """Raised when an attachment upload's body is above ``limit`` bytes, before it is
    parsed (the body names the limit)."""

    def fields(self) -> dict[str, object]:
        return {"limit": self.limit}


class Unauthorized(ServiceError):
    """Raised when a request presents no bearer token, or one no principal has."""

    code = "unauthorized"
    status = 401
    title = "Unauthorized"
    public = "a valid bearer token is required"

    def headers(self) -> dict[str, str]:
        return {"WWW-Authenticate": "Bearer"}


class StreamTokenRefused(ServiceError):
    """Raised when a stream token is missing, malformed, expired, or bound to another
    tenant, subject or session (one answer for each: it never says which)."""

    code = "unauthorized"
    status = 401
    title = "Unauthorized"
    public = "a valid stream token is required"


class BridgeSignatureInvalid(ServiceError):
    """Raised when a chat bridge's inbound request is not signed by its provider: no
    signature, a wrong one, or a timestamp outside the replay window (one answer for
    each). Nothing is looked up or admitted."""

    code = "bridge_signature_invalid"
    status = 401
    title = "Unauthorized"
    public = "the request's signature does not verify"


class WorkspaceNotFound(ServiceError):
    """Raised when a binding names a bridge workspace the operator did not assign to
    the caller's tenant (TURNKEEP_SLACK_WORKSPACES, TURNKEEP_BRIDGE_TENANT): another
    tenant's workspace looks like none. Nothing is written."""

    code = "bridge_workspace_not_found"
    status = 404
    title = "Not found"
    public = "no such workspace of this bridge is assigned to this tenant"


class BridgeNotConfigured(ServiceError):
    """Raised when a chat bridge's inbound route is called and its signing secret is
    not configured (TURNKEEP_SLACK_SIGNING_SECRET; TURNKEEP_BRIDGE_SECRET with
    TURNKEEP_BRIDGE_TENANT)."""

    code = "bridge_not_configured"
    status = 503
    title = "The bridge is not configured"
    public = "this bridge has no signing secret configured"


class AuthNotConfigured(ServiceError):
    """Raised when a guarded route is asked for and no API tokens are configured."""

    code = "auth_not_configured"
    status = 503
    title = "Authentication is not configured"
    public = "no API tokens are configured"


class StreamTokensNotConfigured(ServiceError):
    """Raised when a stream token is asked for or presented and no stream token secret
    is configured."""

    code = "stream_tokens_not_configured"
    status = 503
    title = "Stream tokens are not configured"
    public = "no stream token secret is configured"


class MethodNotAllowed(ServiceError):
    """Raised (by the router) when a path is asked for with a method it does not take."""

    code = "method_not_allowed"
    status = 405
    title = "Method not allowed"


class HttpError(ServiceError):
    """Raised (by the framework) for any other HTTP error: its status is the
    framework's."""

    code = "http_error"
    status = 400
    title = "HTTP error"


class RedisUnavailable(Unavailable):
    """Raised (by an edge, for a Redis client's error) when Redis cannot be reached."""

    public = "redis is unavailable"


class LiveChannelUnavailable(Unavailable):
    """Raised when a stream cannot subscribe to the session's live channel."""

    public = "the live channel is unavailable"


class NotReady(Unavailable):
    """Raised by ``/readyz`` when a check failed; ``checks`` names each one's state."""

    def __init__(self, checks: dict[str, str]) -> None:
        failed = sorted(name for name, state in checks.items() if state != "ok")
        super().__init__("not ready: " + ", ".join(failed))
        self.checks = checks

    def detail(self) -> str:
        return str(self)

    def fields(self) -> dict[str, object]:
        return {"checks": self.checks}
