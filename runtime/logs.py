"""Moved: logging, the process's log records, is runtime/obs/logs.py (observability: logs,
tracing, redaction, faults). This path is the very same module for one release, with a
DeprecationWarning."""

from __future__ import annotations

import sys
import warnings

from runtime.obs import logs as _moved

warnings.warn(
    "runtime.logs moved to runtime.obs.logs; this alias goes in the next release",
    DeprecationWarning,
    stacklevel=2,
)
sys.modules[__name__] = _moved
