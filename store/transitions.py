"""The store's former home, kept for one release: ``Store`` is ``store.facade.Store``
now, and each concern is its own module (store/facade.py says which).

A plain re-export, with no DeprecationWarning: the tests run with warnings as errors,
and code written against this path keeps working until the next release drops it.
"""

from __future__ import annotations

from store.facade import Store
from store.outbox import WebhookCursor
from store.retention import TOOL_STEPS_GRACE, SessionCursor
from store.scans import StalledCursor
from store.statements import CONTEXT_WINDOW_BYTES, CONTEXT_WINDOW_ROWS, CROSS_TENANT
from store.turns import START_RACE_TRIES

__all__ = [
    "CONTEXT_WINDOW_BYTES",
    "CONTEXT_WINDOW_ROWS",
    "CROSS_TENANT",
    "START_RACE_TRIES",
    "TOOL_STEPS_GRACE",
    "SessionCursor",
    "StalledCursor",
    "Store",
    "WebhookCursor",
]
