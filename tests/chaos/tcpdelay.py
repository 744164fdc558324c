"""A TCP proxy that can hold back one reply: a slow network for one request.

Runs an asyncio server on 127.0.0.1 in a background thread of the test process and
relays bytes both ways. ``delay_reply(marker, seconds)`` arms it: the next time a
client sends bytes containing ``marker``, the server's answer on that connection
is held for ``seconds`` before it is relayed. Everything else passes at once.
"""

from __future__ import annotations

import asyncio
import threading


class DelayProxy:
    def __init__(self, upstream_port: int, upstream_host: str = "127.0.0.1") -> None:
        self.upstream = (upstream_host, upstream_port)
        self.port = 0
        self.delayed = 0
        self._arms: list[tuple[bytes, float]] = []
        self._lock = threading.Lock()
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._server: asyncio.base_events.Server | None = None
        self._thread = threading.Thread(target=self._main, name="delay-proxy", daemon=True)

    def start(self) -> DelayProxy:
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("the proxy did not start")
        return self

    def delay_reply(self, marker: bytes, seconds: float) -> None:
        with self._lock:
            self._arms.append((marker, seconds))

    def close(self) -> None:
        async def shutdown() -> None:
            if self._server is not None:
                self._server.close()
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            self._loop.stop()

        if self._thread.is_alive():
            asyncio.run_coroutine_threadsafe(shutdown(), self._loop)
            self._thread.join(10)

    def _main(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._server = self._loop.run_until_complete(
            asyncio.start_server(self._handle, "127.0.0.1", 0)
        )
        self.port = self._server.sockets[0].getsockname()[1]
        self._ready.set()
        self._loop.run_forever()

    def _take(self, data: bytes) -> float:
        with self._lock:
            for i, (marker, seconds) in enumerate(self._arms):
                if marker in data:
                    del self._arms[i]
                    self.delayed += 1
                    return seconds
        return 0.0

    async def _handle(self, creader: asyncio.StreamReader, cwriter: asyncio.StreamWriter) -> None:
        try:
            sreader, swriter = await asyncio.open_connection(*self.upstream)
        except OSError:
            cwriter.close()
            return
        hold: list[float] = []

        async def up() -> None:
            while data := await creader.read(65536):
                seconds = self._take(data)
                if seconds:
                    hold.append(seconds)
                swriter.write(data)
                await swriter.drain()

        async def down() -> None:
            while data := await sreader.read(65536):
                if hold:
                    await asyncio.sleep(hold.pop(0))
                cwriter.write(data)
                await cwriter.drain()

        tasks = [asyncio.ensure_future(up()), asyncio.ensure_future(down())]
        try:
            await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            pass
        finally:
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            cwriter.close()
            swriter.close()
