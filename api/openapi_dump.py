"""``python -m turnkeep.api.openapi_dump [PATH]``: the API's OpenAPI document (what
``/openapi.json`` serves, api/openapi.py) as JSON, to PATH or stdout, without starting
the app. ``make ts-types`` generates the TypeScript client's types from it
(clients/typescript/src/schema.d.ts); tests/integration/test_typescript_client.py fails
when those differ from what the current document gives."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from turnkeep.api.app import create_app


def document() -> dict[str, Any]:
    """The document an app of the default settings serves (no settings are read: the
    document depends on the routes and models alone)."""
    return create_app().openapi()


def main(argv: list[str]) -> None:
    text = json.dumps(document(), indent=2, ensure_ascii=False) + "\n"
    if argv:
        Path(argv[0]).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main(sys.argv[1:])
