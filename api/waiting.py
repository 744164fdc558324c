"""Moved: the long poll of a turn is ``api.service.reads`` (``wait_for_turn``, and
``REREAD``, which is to be set there); this module re-exports it for one release."""

from __future__ import annotations

import warnings

from api.service.reads import REREAD, wait_for_turn

__all__ = ["REREAD", "wait_for_turn"]

warnings.warn(
    "api.waiting moved to api.service.reads; this alias goes in the next release",
    DeprecationWarning,
    stacklevel=2,
)
