"""``client.projects``: the caller's projects (``/v1/projects…``): create, read, list,
update their overrides. The calls are built here without I/O; ``ProjectsApi`` and
``AsyncProjectsApi`` send them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from turnkeep.client import calls
from turnkeep.client.calls import ApiCall, AsyncSend, Send
from turnkeep.models import Project, ProjectPage

_project = calls.reader(Project)


def create(
    project_id: str | None, overrides: Mapping[str, Any] | None, idempotency_key: str | None
) -> ApiCall[Project]:
    body: dict[str, Any] = {"overrides": dict(overrides or {})}
    if project_id is not None:
        body["project_id"] = project_id
    headers = calls.key(idempotency_key or project_id)
    return ApiCall("POST", "/v1/projects", _project, json=body, headers=headers)


def get(project_id: str) -> ApiCall[Project]:
    return ApiCall("GET", f"/v1/projects/{project_id}", _project)


def listing(limit: int, after: str | None) -> ApiCall[ProjectPage]:
    params = calls.page(limit, after)
    return ApiCall("GET", "/v1/projects", calls.reader(ProjectPage), params=params)


def update(project_id: str, overrides: Mapping[str, Any]) -> ApiCall[Project]:
    body = {"overrides": dict(overrides)}
    return ApiCall("PATCH", f"/v1/projects/{project_id}", _project, json=body)


class ProjectsApi:
    """``client.projects`` of the sync client."""

    def __init__(self, send: Send) -> None:
        self._send = send

    def create(
        self,
        project_id: str | None = None,
        *,
        overrides: Mapping[str, Any] | None = None,
        idempotency_key: str | None = None,
    ) -> Project:
        """A project owned by the caller (the token's subject), 404 to everyone else."""
        return self._send(create(project_id, overrides, idempotency_key))

    def get(self, project_id: str) -> Project:
        return self._send(get(project_id))

    def list(self, *, limit: int = 50, after: str | None = None) -> ProjectPage:
        """A page of the caller's projects, newest first."""
        return self._send(listing(limit, after))

    def update(self, project_id: str, overrides: Mapping[str, Any]) -> Project:
        """Replace its overrides; turns admitted before keep the ones they pinned."""
        return self._send(update(project_id, overrides))


class AsyncProjectsApi:
    """``client.projects`` of the async client: ``ProjectsApi``'s methods, awaited."""

    def __init__(self, send: AsyncSend) -> None:
        self._send = send

    async def create(
        self,
        project_id: str | None = None,
        *,
        overrides: Mapping[str, Any] | None = None,
        idempotency_key: str | None = None,
    ) -> Project:
        return await self._send(create(project_id, overrides, idempotency_key))

    async def get(self, project_id: str) -> Project:
        return await self._send(get(project_id))

    async def list(self, *, limit: int = 50, after: str | None = None) -> ProjectPage:
        return await self._send(listing(limit, after))

    async def update(self, project_id: str, overrides: Mapping[str, Any]) -> Project:
        return await self._send(update(project_id, overrides))
