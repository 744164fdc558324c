"""Headless Chromium for the browser tests: Debian's ``/usr/bin/chromium`` (package
``chromium``; make test installs it) driven by Playwright's Python API. The pip wheel
brings Playwright's driver; its own browser download (``playwright install``) is never
used, so nothing is fetched at test time.

A missing Chromium fails the test, in CI and locally alike: a browser test that
skips would pass without having looked at the page.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

#: where Debian's package puts it; TURNKEEP_CHROMIUM points elsewhere
CHROMIUM = os.environ.get("TURNKEEP_CHROMIUM", "/usr/bin/chromium")
#: headless, as root, on a machine without internet: no sandbox (root), no GPU, and
#: none of Chromium's own background connections, which a closed network refuses.
#: Playwright gives every launch a fresh, empty profile (its --user-data-dir).
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
#: where the browser tests leave their screenshots (git-ignored)
OUTPUT = Path(__file__).resolve().parent.parent / "test-output"


def chromium_path() -> str:
    """The Chromium binary; fails the calling test when there is none."""
    if not os.access(CHROMIUM, os.X_OK):
        where = "CI" if os.environ.get("CI") == "true" else "this machine"
        pytest.fail(
            f"no Chromium at {CHROMIUM} on {where}: install Debian's package "
            "(apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y chromium; "
            "make browser does) or set TURNKEEP_CHROMIUM",
            pytrace=False,
        )
    return CHROMIUM


@contextmanager
def chromium(**launch: Any) -> Iterator[Any]:
    """A launched headless Chromium (a Playwright ``Browser``), closed afterwards."""
    executable = chromium_path()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=executable, headless=True, args=FLAGS, **launch
        )
        try:
            yield browser
        finally:
            browser.close()


def output_dir(name: str) -> Path:
    """``test-output/<name>/``, made if need be."""
    path = OUTPUT / name
    path.mkdir(parents=True, exist_ok=True)
    return path
