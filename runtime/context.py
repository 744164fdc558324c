"""Moved: the model's context window (the request's estimate, compaction's chunks and
summary prompt) is runtime/window.py, one meaning per file name. This path is the very
same module for one release, with a DeprecationWarning."""

from __future__ import annotations

import sys
import warnings

from runtime import window as _moved

warnings.warn(
    "runtime.context moved to runtime.window; this alias goes in the next release",
    DeprecationWarning,
    stacklevel=2,
)
sys.modules[__name__] = _moved
