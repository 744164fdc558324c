"""docs/configuration.md lists every variable the settings read, under its section's
heading with its field, and names no setting that is not one."""

from __future__ import annotations

import re
from pathlib import Path

from turnkeep.runtime.settings import Settings, variables

DOC = Path(__file__).resolve().parents[2] / "docs" / "configuration.md"
ROW = re.compile(r"^\| `(TURNKEEP_[A-Z0-9_]+)` \| `(\w+)` \|", re.MULTILINE)


def _documented() -> dict[str, dict[str, str]]:
    """Each section heading's table: variable to field."""
    text = DOC.read_text()
    found: dict[str, dict[str, str]] = {}
    for part in re.split(r"^## ", text, flags=re.MULTILINE)[1:]:
        heading = part.split("\n", 1)[0].strip()
        found[heading] = dict(ROW.findall(part))
    return found


def test_every_setting_is_documented_under_its_section() -> None:
    documented = _documented()
    expected: dict[str, dict[str, str]] = {}
    for variable, (section, field) in variables().items():
        expected.setdefault(f"`{section}`", {})[variable] = field
    assert {h: t for h, t in documented.items() if h.startswith("`")} == expected


def test_the_sections_come_in_the_settings_order() -> None:
    headings = [h.strip("`") for h in _documented() if h.startswith("`")]
    assert headings == list(Settings.model_fields)
