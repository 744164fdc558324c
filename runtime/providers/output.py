"""Moved: structured output at the source (how a request's output schema goes on the
wire, ``strict_compatible``) is runtime/providers/structured.py, one meaning per file
name. This path is the very same module for one release, with a DeprecationWarning."""

from __future__ import annotations

import sys
import warnings

from runtime.providers import structured as _moved

warnings.warn(
    "runtime.providers.output moved to runtime.providers.structured; this alias goes in "
    "the next release",
    DeprecationWarning,
    stacklevel=2,
)
sys.modules[__name__] = _moved
