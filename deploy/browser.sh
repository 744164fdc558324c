#!/usr/bin/env bash
# Chromium for the console's browser test (tests/integration/test_console.py drives it
# through tests/browser.py): Debian's package at /usr/bin/chromium, or the binary
# TURNKEEP_CHROMIUM names. `make browser` runs this, and `make test` and .ci/run through
# it. Installs the package when it is missing and this runs as root on a machine with
# apt-get (CI's kind); anywhere else it says what is missing and how to get it, and
# fails, because the test would fail later without it (never `playwright install`: the
# playwright wheel's driver launches this binary).
set -euo pipefail
chromium="${TURNKEEP_CHROMIUM:-/usr/bin/chromium}"
if [ -x "$chromium" ]; then
  exit 0
fi
need="the console's browser test (tests/integration/test_console.py) needs Chromium at $chromium"
if [ -n "${TURNKEEP_CHROMIUM:-}" ]; then
  echo "deploy/browser.sh: $need (TURNKEEP_CHROMIUM), and nothing executable is there" >&2
  exit 1
fi
if ! command -v apt-get >/dev/null; then
  echo "deploy/browser.sh: $need; there is no apt-get here to install Debian's chromium." >&2
  echo "  Install Chromium (or Chrome) with this system's package manager and point" >&2
  echo "  TURNKEEP_CHROMIUM at its binary, e.g. TURNKEEP_CHROMIUM=/usr/bin/chromium-browser make test" >&2
  exit 1
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "deploy/browser.sh: $need; installing it takes root. Run once:" >&2
  echo "  sudo apt-get update && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y chromium" >&2
  echo "  (or point TURNKEEP_CHROMIUM at another Chromium or Chrome binary)" >&2
  exit 1
fi
echo "installing Debian's chromium for the console's browser test (apt-get)"
# another apt run (unattended upgrades, a provisioning step) may hold the lock a while
apt_get=(apt-get -o DPkg::Lock::Timeout=600 -q)
"${apt_get[@]}" update
DEBIAN_FRONTEND=noninteractive "${apt_get[@]}" install -y chromium
if [ ! -x "$chromium" ]; then
  echo "deploy/browser.sh: apt-get installed chromium, yet $chromium is not there" >&2
  exit 1
fi
