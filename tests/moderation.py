"""A moderation endpoint for the ``moderation`` processor's tests (runtime/processors.py,
tests/integration/test_moderation.py), and the agent that asks it.

``ModerationServer`` is a real HTTP server on 127.0.0.1 speaking the wire format the
hook speaks: ``POST {"input": text}`` answered ``{"flagged": bool, "categories":
[...]}``, flagged (category ``violence``) when the text holds ``FLAGGED``. It keeps every
text it was asked about; a request the hook should never send (another path, a body
without a string ``input``) is answered 400 and kept in ``problems``, for the test's
thread to assert on (an assert in the server's thread would be swallowed).

``AGENTS`` (a worker's ``TURNKEEP_AGENTS=tests.moderation``) is the one agent,
``moderated``, whose endpoint is ``TURNKEEP_TEST_MODERATION_URL``: the URL is part of
the definition hash, so a test builds the same definition with ``moderated(url)``.
"""

from __future__ import annotations

import json
import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType

from turnkeep import Agent, moderation

#: what makes a text flagged
FLAGGED = "flag-me-moderator"
PATH = "/v1/moderate"


class ModerationServer:
    """``with ModerationServer() as m: ... m.url ... m.inputs``"""

    def __init__(self) -> None:
        #: every text asked about, in arrival order
        self.inputs: list[str] = []
        self.problems: list[str] = []
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                try:
                    text = json.loads(raw)["input"] if self.path == PATH else None
                except (ValueError, KeyError, TypeError):
                    text = None
                if not isinstance(text, str):
                    with server.lock:
                        server.problems.append(f"POST {self.path}: {raw[:200]!r}")
                    self._answer(400, {"error": "want POST {PATH} with a string input"})
                    return
                with server.lock:
                    server.inputs.append(text)
                flagged = FLAGGED in text
                self._answer(
                    200, {"flagged": flagged, "categories": ["violence"] if flagged else []}
                )

            def _answer(self, status: int, body: dict[str, object]) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}{PATH}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def asked(self) -> list[str]:
        """The texts asked about so far; fails if any request was malformed."""
        with self.lock:
            assert self.problems == [], self.problems
            return list(self.inputs)

    def __enter__(self) -> ModerationServer:
        self.thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.server.shutdown()
        self.server.server_close()


def moderated(url: str) -> Agent:
    """Echoes the conversation (the ``memory`` demo model of tests/agents.py), its input
    and every answer moderated at ``url``."""
    import tests.agents  # noqa: F401  (registers the demo model)

    return Agent(
        name="moderated",
        version="1",
        provider="demo",
        model="memory",
        instructions="Answer.",
        processors=(moderation(url, stages=("input", "output")),),
    )


AGENTS = [moderated(os.environ.get("TURNKEEP_TEST_MODERATION_URL", "http://127.0.0.1:9/none"))]
