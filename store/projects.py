"""Projects and their owners (api/service/projects.py; the statements of sql/projects.sql;
docs/projects.md)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from turnkeep.store.errors import NotFound
from turnkeep.store.records import ProjectRecord, SessionAccess
from turnkeep.store.rows import jsonb
from turnkeep.store.statements import Statements


class Projects(Statements):
    """A tenant's projects, each seen by its owner only (``NotFound`` to anyone else)."""

    def session_access(self, tenant_id: str, session_id: str) -> SessionAccess:
        """Who may see the session (its project and owner) and whether it is gone
        (deleted or expired, docs/erasure.md); ``NotFound`` for no session and no
        tombstone. One read."""
        row = self._one("session_access", {"tenant_id": tenant_id, "session_id": session_id})
        if row is None:
            raise NotFound("session not found")
        return SessionAccess(row["project_id"], row["owner"], row["gone_at"], row["erased_at"])

    def create_project(
        self,
        tenant_id: str,
        project_id: str,
        *,
        owner: str,
        overrides: Mapping[str, Any],
        request_hash: str,
    ) -> ProjectRecord | None:
        """Create a project owned by ``owner``; None when the id is taken (by a replay,
        another request, or another subject: ``get_project`` tells the first two)."""
        row = self._one(
            "create_project",
            {
                "tenant_id": tenant_id,
                "project_id": project_id,
                "owner": owner,
                "overrides": jsonb(dict(overrides)),
                "request_hash": request_hash,
            },
        )
        return None if row is None else ProjectRecord(**row)

    def get_project(self, tenant_id: str, project_id: str, *, owner: str) -> ProjectRecord:
        """``owner``'s project; ``NotFound`` for none, and for another subject's."""
        row = self._one(
            "get_project", {"tenant_id": tenant_id, "project_id": project_id, "owner": owner}
        )
        if row is None:
            raise NotFound("project not found")
        return ProjectRecord(**row)

    def list_projects(
        self,
        tenant_id: str,
        *,
        owner: str,
        limit: int,
        before: tuple[datetime, str] | None = None,
    ) -> list[ProjectRecord]:
        """At most ``limit`` of ``owner``'s projects, newest first; ``before`` is the
        (created_at, project_id) of the last one of the previous page."""
        at, pid = before if before is not None else (None, "")
        rows = self._rows(
            "list_projects",
            {
                "tenant_id": tenant_id,
                "owner": owner,
                "limit": limit,
                "before_at": at,
                "before_id": pid,
            },
        )
        return [ProjectRecord(**r) for r in rows]

    def update_project(
        self, tenant_id: str, project_id: str, *, owner: str, overrides: Mapping[str, Any]
    ) -> ProjectRecord:
        """Replace the overrides of ``owner``'s project; ``NotFound`` for none (and for
        another subject's)."""
        row = self._one(
            "update_project",
            {
                "tenant_id": tenant_id,
                "project_id": project_id,
                "owner": owner,
                "overrides": jsonb(dict(overrides)),
            },
        )
        if row is None:
            raise NotFound("project not found")
        return ProjectRecord(**row)
