"""The wire shape of a deleted session (docs/erasure.md): its tombstone. Defined once, as
turnkeep/models.py's are (the client parses answers with them; api/http/bodies.py closes
them for the OpenAPI document)."""

from __future__ import annotations

from typing import Literal

from turnkeep.models import Instant, Wire


class Tombstone(Wire):
    """What stays of a deleted session (``DELETE /v1/sessions/{sid}``, docs/erasure.md):
    who deleted it and when, ``reason`` ``deleted`` or ``expired`` (its TTL), and
    ``erased_at`` once everything it held is gone (null while its erasure runs);
    ``erased_rows`` counts the rows deleted so far."""

    session_id: str
    reason: Literal["deleted", "expired"]
    deleted_by: str | None = None
    deleted_at: Instant
    erased_at: Instant | None = None
    erased_rows: int
