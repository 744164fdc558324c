"""Moved to ``api.service.bounds``; this module re-exports it for one release."""

from __future__ import annotations

import warnings

from api.service.bounds import StreamSlots, check_schema, check_turn, depth_over

__all__ = ["StreamSlots", "check_schema", "check_turn", "depth_over"]

warnings.warn(
    "api.bounds moved to api.service.bounds; this alias goes in the next release",
    DeprecationWarning,
    stacklevel=2,
)
