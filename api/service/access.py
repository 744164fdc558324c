"""Who may do what: a reader never writes, and a session in a project is its owner's
alone (api/service/__init__.py says why the checks come first)."""

from __future__ import annotations

from api.auth import Principal
from api.errors import ForbiddenRole
from api.services import Services
from runtime.tokens import TenantRole
from store.errors import NotFound


def may_write(principal: Principal) -> None:
    """``ForbiddenRole`` for a principal that may only read."""
    if principal.role == TenantRole.READER:
        raise ForbiddenRole("a reader may not write")


def visible(
    services: Services,
    principal: Principal,
    session_id: str,
    *,
    missing: str = "session not found",
    missing_ok: bool = False,
) -> None:
    """``NotFound(missing)`` unless the session exists for the principal's tenant and
    is not in a project of another owner (the project's stored owner, read now; an
    admin is no owner). ``missing`` is what the caller answers for a session that does
    not exist (``turn not found`` on a turn's routes), so both answers are one;
    ``missing_ok``: no session is no refusal (an admission creates it)."""
    try:
        project, owner = services.store.session_project(principal.tenant, session_id)
    except NotFound:
        if missing_ok:
            return
        raise NotFound(missing) from None
    if project is not None and owner != principal.subject:
        raise NotFound(missing)
