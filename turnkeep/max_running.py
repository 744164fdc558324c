"""The wire shape of a tenant's max_running (``GET/PUT /v1/limits``). Defined once, as
turnkeep/models.py's are (the client parses answers with them; api/http/bodies.py closes
them for the OpenAPI document)."""

from __future__ import annotations

from turnkeep.models import Instant, Wire


class TenantMaxRunning(Wire):
    """A tenant's max_running (docs/flow-control.md): at most this many of its turns
    running at once, the rest queued."""

    #: the tenant's own, declared with ``PUT /v1/limits``; None: it declared none
    max_running: int | None
    #: the one in force: the tenant's own, else the deployment's
    #: ``TURNKEEP_MAX_RUNNING_PER_TENANT``; None: no limit
    effective_max_running: int | None
    #: who declared it and when (None: never declared)
    updated_by: str | None = None
    updated_at: Instant | None = None
    #: whether the caller may declare them (``PUT /v1/limits``: a tenant's admin), so
    #: a client such as the console offers the change only to who may make it
    may_declare: bool = False
