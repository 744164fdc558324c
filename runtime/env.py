"""How a settings section reads the environment: every variable under one prefix,
``TURNKEEP_``, a section's own prefix after it (runtime/settings.py)."""

from __future__ import annotations

from pydantic_settings import SettingsConfigDict

PREFIX = "TURNKEEP_"


def section(prefix: str = "") -> SettingsConfigDict:
    """A section's config: ``TURNKEEP_<prefix><FIELD>``, or the field's alias."""
    return SettingsConfigDict(
        env_prefix=PREFIX + prefix, extra="ignore", validate_by_name=True, validate_by_alias=True
    )
