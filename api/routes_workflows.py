"""Moved to ``api.http.workflows``; this module re-exports it for one release."""

from __future__ import annotations

import warnings

from api.http.workflows import (
    NodeRequest,
    admit_node,
    node_ids,
    node_json,
    node_location,
    node_state,
    read_node,
    router,
)

__all__ = [
    "NodeRequest",
    "admit_node",
    "node_ids",
    "node_json",
    "node_location",
    "node_state",
    "read_node",
    "router",
]

warnings.warn(
    "api.routes_workflows moved to api.http.workflows; this alias goes in the next release",
    DeprecationWarning,
    stacklevel=2,
)
