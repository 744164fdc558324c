"""A webhook receiver for tests: a small local HTTP server that records every POST and
answers from a script ("200", "500", "503", … or "cut": read the request, then close
the connection without answering); past the script's end it answers 200."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Received:
    headers: dict[str, str]
    body: bytes
    answered: str


class Receiver:
    """``with Receiver(["500", "cut"]) as rx: ... rx.url ... rx.received``"""

    def __init__(self, script: Iterable[str] = ()) -> None:
        self.script = list(script)
        self.received: list[Received] = []
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with receiver._lock:
                    action = receiver.script.pop(0) if receiver.script else "200"
                    receiver.received.append(
                        Received({k.lower(): v for k, v in self.headers.items()}, body, action)
                    )
                if action == "cut":
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                self.send_response(int(action))
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/hook"

    def deliveries(self) -> list[Received]:
        with self._lock:
            return list(self.received)

    def acknowledged(self) -> list[Received]:
        return [r for r in self.deliveries() if r.answered.startswith("2")]

    def __enter__(self) -> Receiver:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
