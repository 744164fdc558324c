"""Moved to ``api.service.transcript``; this module re-exports it for one release."""

from __future__ import annotations

import warnings

from api.service.transcript import transcript

__all__ = ["transcript"]

warnings.warn(
    "api.transcript moved to api.service.transcript; this alias goes in the next release",
    DeprecationWarning,
    stacklevel=2,
)
