"""Moved: tracing, the turns' traces, is runtime/obs/tracing.py (observability: logs, tracing,
redaction, faults). This path is the very same module for one release, with a
DeprecationWarning."""

from __future__ import annotations

import sys
import warnings

from runtime.obs import tracing as _moved

warnings.warn(
    "runtime.tracing moved to runtime.obs.tracing; this alias goes in the next release",
    DeprecationWarning,
    stacklevel=2,
)
sys.modules[__name__] = _moved
