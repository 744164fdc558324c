"""The client's settings: what ``Client``, ``AsyncClient``, the CLI's client commands and
``turnkeep acp`` read from the environment. A client-only install has no server settings
(runtime/settings.py needs the server extra), so the client keeps its own few here.

``TURNKEEP_URL``        the API's base URL (default ``http://127.0.0.1:8000``)
``TURNKEEP_TOKEN``      the bearer token (unset: no ``Authorization`` header)
``TURNKEEP_LOG_LEVEL``  ``turnkeep acp``'s log level on stderr (default ``WARNING``)
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

DEFAULT_URL = "http://127.0.0.1:8000"


@dataclass(frozen=True)
class ClientSettings:
    url: str = DEFAULT_URL
    token: str | None = None
    log_level: str = "WARNING"

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> ClientSettings:
        """The environment's (an unset or empty variable keeps the default)."""
        env = os.environ if environ is None else environ
        return cls(
            url=env.get("TURNKEEP_URL") or DEFAULT_URL,
            token=env.get("TURNKEEP_TOKEN"),
            log_level=env.get("TURNKEEP_LOG_LEVEL") or "WARNING",
        )
