"""Who may do what: a reader never writes, and a session in a project is its owner's
alone (api/service/__init__.py says why the checks come first); a session deleted or
past its TTL is gone for everyone who could see it (docs/erasure.md)."""

from __future__ import annotations

from turnkeep.api.auth import Principal
from turnkeep.api.errors import ForbiddenRole
from turnkeep.api.resources import ApiResources
from turnkeep.runtime.tokens import TenantRole
from turnkeep.store.errors import NotFound, SessionDeleted
from turnkeep.store.records import SessionAccess


def may_write(principal: Principal) -> None:
    """``ForbiddenRole`` for a principal that may only read."""
    if principal.role == TenantRole.READER:
        raise ForbiddenRole("a reader may not write")


def visible(
    services: ApiResources,
    principal: Principal,
    session_id: str,
    *,
    missing: str = "session not found",
    missing_ok: bool = False,
) -> None:
    """``NotFound(missing)`` unless the session exists for the principal's tenant and
    is not in a project of another owner (the project's stored owner, read now; an
    admin is no owner); ``SessionDeleted`` (410) once it was deleted or expired, to
    whoever could see it. ``missing`` is what the caller answers for a session that
    does not exist (``turn not found`` on a turn's routes), so both answers are one;
    ``missing_ok``: no session is no refusal (an admission creates it)."""
    access = seen(services, principal, session_id, missing=missing, missing_ok=missing_ok)
    if access is not None and access.gone_at is not None:
        raise SessionDeleted(access.gone_at, access.erased_at)


def seen(
    services: ApiResources,
    principal: Principal,
    session_id: str,
    *,
    missing: str = "session not found",
    missing_ok: bool = False,
) -> SessionAccess | None:
    """The session's access as ``visible`` reads it, gone or not (a DELETE answers a
    deleted session's tombstone); None for none with ``missing_ok``."""
    try:
        access = services.store.projects.session_access(principal.tenant, session_id)
    except NotFound:
        if missing_ok:
            return None
        raise NotFound(missing) from None
    if access.project_id is not None and access.owner != principal.subject:
        raise NotFound(missing)
    return access
