"""The wire shape of an error: an RFC 9457 problem (``application/problem+json``),
defined once. The API renders every error of its tree as one (api/problems.py), the
client parses it into an ``ApiError`` (turnkeep/client/errors.py), and the OpenAPI
document states it closed (api/http/bodies.py ``closed``)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from turnkeep.models import Instant, Wire

#: a problem's ``type``: this, then its ``code``
TYPE_PREFIX = "urn:turnkeep:problem:"


#: the readiness checks (``GET /readyz``, and a 503 ``not_ready`` problem); no docstring,
#: which the OpenAPI document would carry
class Checks(Wire):
    postgres: Literal["ok", "failed"]
    redis: Literal["ok", "failed"]


class Problem(Wire):
    """An RFC 9457 problem (``application/problem+json``): every error the API answers.
    ``code`` is stable; some codes add fields (listed, all optional). The body never
    carries tenant data, ids, tokens or request input."""

    type: str = Field(pattern=r"^urn:turnkeep:problem:[a-z_]+$")
    title: str
    status: int
    code: str = Field(pattern=r"^[a-z_]+$")
    detail: str
    #: validation_error: where and what, never the input
    errors: list[dict[str, Any]] | None = None
    #: cursor_ahead
    cursor: int | None = None
    head_seq: int | None = None
    #: resync_required
    requested: int | None = None
    earliest: int | None = None
    latest: int | None = None
    #: quota_exceeded: the quota's scope and bound
    quota: str | None = None
    limit: int | None = None
    #: session_deleted: when, and when its erasure finished (null: under way)
    deleted_at: Instant | None = None
    erased_at: Instant | None = None
    #: a failed readiness check
    checks: Checks | None = None
    #: promotion_refused: the refusal's entry in the agent's promotion journal, and
    #: each check that failed (a ``PromotionCheck``, turnkeep/evaluation.py)
    seq: int | None = None
    failed: list[dict[str, Any]] | None = None
