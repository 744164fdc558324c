"""Moved: the named fault points the chaos tests arm (TURNKEEP_FAULTS) are
runtime/obs/faults.py (observability: logs, tracing, redaction, faults). This path is
the very same module for one release, with a DeprecationWarning."""

from __future__ import annotations

import sys
import warnings

from runtime.obs import faults as _moved

warnings.warn(
    "runtime.faults moved to runtime.obs.faults; this alias goes in the next release",
    DeprecationWarning,
    stacklevel=2,
)
sys.modules[__name__] = _moved
