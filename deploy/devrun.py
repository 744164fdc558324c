"""``make run``'s former launcher, kept as a shim: the launcher is ``turnkeep dev``
(turnkeep/dev.py), which an installed package has without this repository's deploy/.

    python deploy/devrun.py [--once] [--migrate-only] [--port N] [--flower-port N]

is ``turnkeep dev`` with the same options (``make migrate`` still runs it so).
"""

from __future__ import annotations

import sys
from pathlib import Path

if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from turnkeep.cli import main

    sys.exit(main(["dev", *sys.argv[1:]]))
