"""Moved to ``api.service.projects``; this module re-exports it for one release."""

from __future__ import annotations

import warnings

from api.service.projects import (
    AgentOverride,
    Created,
    LimitsOverride,
    Overrides,
    ProjectCreate,
    ProjectMismatch,
    ProjectUpdate,
    create,
    cursor,
    page,
    pin,
    project_json,
    read,
    update,
)

__all__ = [
    "AgentOverride",
    "Created",
    "LimitsOverride",
    "Overrides",
    "ProjectCreate",
    "ProjectMismatch",
    "ProjectUpdate",
    "create",
    "cursor",
    "page",
    "pin",
    "project_json",
    "read",
    "update",
]

warnings.warn(
    "api.projects moved to api.service.projects; this alias goes in the next release",
    DeprecationWarning,
    stacklevel=2,
)
