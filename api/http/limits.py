"""Request body limit: 413 ``payload_too_large`` above ``max_body_bytes``.

Checked twice: the declared ``Content-Length`` before anything is read, and the
bytes actually streamed (a chunked body has no length). The body is buffered up to
the limit and replayed to the app, which reads whole JSON bodies anyway; later
``receive`` calls go to the server, so disconnects still reach streaming responses.
"""

from __future__ import annotations

from collections.abc import Callable

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from turnkeep.api import problems
from turnkeep.api.errors import PayloadTooLarge


class BodyLimit:
    """Pure ASGI middleware; ``limit`` is read per request (settings live on the app)."""

    def __init__(self, app: ASGIApp, *, limit: Callable[[], int]) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.limit()
        for name, value in scope.get("headers", ()):
            if name == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    declared = -1
                if declared > limit:
                    await problems.answer(PayloadTooLarge(limit)).response()(scope, receive, send)
                    return
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                # the client went away before sending its body
                return
            body = message.get("body", b"")
            size += len(body)
            if size > limit:
                await problems.answer(PayloadTooLarge(limit)).response()(scope, receive, send)
                return
            chunks.append(body)
            if not message.get("more_body", False):
                break
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": b"".join(chunks), "more_body": False}
            return await receive()

        await self.app(scope, replay, send)
