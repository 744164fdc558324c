"""``python -m turnkeep.cli``: the ``turnkeep`` command."""

import sys

from turnkeep.cli.app import main

if __name__ == "__main__":
    sys.exit(main())
