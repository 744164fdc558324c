"""Moved: redaction of known secrets is runtime/obs/redact.py (observability: logs, tracing,
redaction, faults). This path is the very same module for one release, with a
DeprecationWarning."""

from __future__ import annotations

import sys
import warnings

from runtime.obs import redact as _moved

warnings.warn(
    "runtime.redact moved to runtime.obs.redact; this alias goes in the next release",
    DeprecationWarning,
    stacklevel=2,
)
sys.modules[__name__] = _moved
