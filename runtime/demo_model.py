"""Moved: the offline demo model (the ``demo`` provider and ``demo_script``) is
runtime/providers/demo_model.py, beside the other providers. This path is the very same
module for one release, with a DeprecationWarning."""

from __future__ import annotations

import sys
import warnings

from runtime.providers import demo_model as _moved

warnings.warn(
    "runtime.demo_model moved to runtime.providers.demo_model; this alias goes in the next release",
    DeprecationWarning,
    stacklevel=2,
)
sys.modules[__name__] = _moved
