"""A Postgres wire-protocol proxy that can drop a connection during a COMMIT.

Runs an asyncio server on 127.0.0.1 in a background thread of the test process and
relays bytes to the real server, reading the frontend's message stream as it goes:
Parse (statement name -> query), Bind (which statement, with its parameter bytes),
Execute, and what ends a unit of work: the simple-protocol ``COMMIT`` of an explicit
transaction, or, in autocommit, the Sync after an Execute (the implicit transaction
of the extended protocol commits there) or a simple query. When an armed trigger
matches a statement of the unit being committed, the proxy cuts:

``after_reply``    COMMIT (Sync) goes to the server, the proxy waits for its answer
                   (up to ReadyForQuery), throws it away and closes both sides: the
                   commit landed, the client never hears so.
``before_server``  COMMIT (Sync) is never sent; both sides are closed: nothing landed.
"""

from __future__ import annotations

import asyncio
import struct
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

#: (query text, Bind message bytes) of one executed statement
Statement = tuple[str, bytes]
Trigger = Callable[[list[Statement]], bool]

_ENCRYPTION = {80877103, 80877104}  # SSLRequest, GSSENCRequest
_CANCEL = 80877102


@dataclass
class Cut:
    mode: str
    statements: list[Statement]


@dataclass
class _Arm:
    trigger: Trigger
    mode: str
    times: int
    on_cut: Callable[[], object] | None = None


@dataclass
class _Conn:
    statements: dict[str, str] = field(default_factory=dict)
    bound: Statement | None = None
    txn: list[Statement] = field(default_factory=list)
    #: set when the server's reply to a COMMIT must be swallowed, then both closed
    swallow: asyncio.Event = field(default_factory=asyncio.Event)
    arm: _Arm | None = None
    #: inside BEGIN ... COMMIT; else every statement is its own (implicit) transaction
    in_txn: bool = False


class PgProxy:
    def __init__(self, upstream_port: int, upstream_host: str = "127.0.0.1") -> None:
        self.upstream = (upstream_host, upstream_port)
        self.port = 0
        self.cuts: list[Cut] = []
        self.commits = 0
        self._arms: list[_Arm] = []
        self._lock = threading.Lock()
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._server: asyncio.base_events.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._thread = threading.Thread(target=self._main, name="pgproxy", daemon=True)

    # -- control (any thread) -----------------------------------------------------

    def start(self) -> PgProxy:
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("the proxy did not start")
        return self

    def arm(
        self,
        trigger: Trigger,
        *,
        mode: str = "after_reply",
        times: int = 1,
        on_cut: Callable[[], object] | None = None,
    ) -> None:
        """Cut the next ``times`` COMMITs whose transaction matches ``trigger``.
        ``on_cut`` runs (on the proxy's thread) after the server's answer arrived and
        before the client's connection is closed: something that happens "meanwhile"."""
        assert mode in ("after_reply", "before_server")
        with self._lock:
            self._arms.append(_Arm(trigger, mode, times, on_cut))

    def armed(self) -> int:
        with self._lock:
            return sum(a.times for a in self._arms)

    def close(self) -> None:
        async def shutdown() -> None:
            if self._server is not None:
                self._server.close()
            for w in list(self._writers):
                w.close()
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            self._loop.stop()

        if self._thread.is_alive():
            asyncio.run_coroutine_threadsafe(shutdown(), self._loop)
            self._thread.join(10)

    # -- the loop -------------------------------------------------------------------

    def _main(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._server = self._loop.run_until_complete(
            asyncio.start_server(self._handle, "127.0.0.1", 0)
        )
        self.port = self._server.sockets[0].getsockname()[1]
        self._ready.set()
        self._loop.run_forever()

    def _match(self, txn: list[Statement]) -> _Arm | None:
        with self._lock:
            for arm in self._arms:
                if arm.times > 0 and arm.trigger(txn):
                    arm.times -= 1
                    self.cuts.append(Cut(arm.mode, list(txn)))
                    return arm
        return None

    async def _handle(self, creader: asyncio.StreamReader, cwriter: asyncio.StreamWriter) -> None:
        try:
            sreader, swriter = await asyncio.open_connection(*self.upstream)
        except OSError:
            cwriter.close()
            return
        self._writers.update((cwriter, swriter))
        state = _Conn()
        up = asyncio.ensure_future(self._frontend(creader, swriter, cwriter, state))
        down = asyncio.ensure_future(self._backend(sreader, cwriter, swriter, state))
        try:
            await asyncio.wait([up, down], return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            pass  # the proxy is closing
        finally:
            for task in (up, down):
                task.cancel()
            await asyncio.gather(up, down, return_exceptions=True)
            for w in (cwriter, swriter):
                w.close()
                self._writers.discard(w)

    async def _frontend(
        self,
        r: asyncio.StreamReader,
        server: asyncio.StreamWriter,
        client: asyncio.StreamWriter,
        st: _Conn,
    ) -> None:
        # untyped start-up packets until the StartupMessage itself; the proxy itself
        # declines TLS and GSS encryption so that it can read what follows
        while True:
            head = await r.readexactly(8)
            length, code = struct.unpack("!II", head)
            body = await r.readexactly(length - 8)
            if code in _ENCRYPTION:
                client.write(b"N")
                await client.drain()
                continue
            server.write(head + body)
            await server.drain()
            if code != _CANCEL:
                break
        while True:
            head = await r.readexactly(5)
            kind, length = head[:1], struct.unpack("!I", head[1:])[0]
            body = await r.readexactly(length - 4)
            arm = self._frontend_message(kind, body, st)
            if arm is not None:
                st.arm = arm
                if arm.mode == "before_server":
                    if arm.on_cut is not None:
                        arm.on_cut()
                    return
                st.swallow.set()
            server.write(head + body)
            await server.drain()
            if st.swallow.is_set():
                # the backend side closes both once the server has answered
                await asyncio.sleep(3600)

    def _frontend_message(self, kind: bytes, body: bytes, st: _Conn) -> _Arm | None:
        """Follow one frontend message; the arm to cut with when it ends a unit of work
        (an explicit COMMIT, or the Sync or simple query that ends an implicit one)."""
        if kind == b"P":
            name, _, rest = body.partition(b"\0")
            st.statements[name.decode()] = rest.partition(b"\0")[0].decode()
        elif kind == b"B":
            _portal, _, rest = body.partition(b"\0")
            name = rest.partition(b"\0")[0].decode()
            st.bound = (st.statements.get(name, ""), body)
        elif kind == b"E" and st.bound is not None:
            st.txn.append(st.bound)
        elif kind == b"S" and not st.in_txn and st.txn:
            # autocommit: the implicit transaction of the extended protocol commits at Sync
            return self._end_of_unit(st)
        elif kind == b"Q":
            sql = body.rstrip(b"\0").decode(errors="replace").strip()
            word = sql.split(None, 1)[0].upper() if sql else ""
            if word == "BEGIN":
                st.in_txn, st.txn = True, []
            elif word == "ROLLBACK":
                st.in_txn, st.txn = False, []
            elif word == "COMMIT":
                st.in_txn = False
                return self._end_of_unit(st)
            else:
                st.txn.append((sql, b""))
                if not st.in_txn:
                    return self._end_of_unit(st)
        return None

    def _end_of_unit(self, st: _Conn) -> _Arm | None:
        self.commits += 1
        arm = self._match(st.txn)
        st.txn = []
        return arm

    async def _backend(
        self,
        r: asyncio.StreamReader,
        client: asyncio.StreamWriter,
        server: asyncio.StreamWriter,
        st: _Conn,
    ) -> None:
        while True:
            head = await r.readexactly(5)
            kind, length = head[:1], struct.unpack("!I", head[1:])[0]
            body = await r.readexactly(length - 4)
            if st.swallow.is_set():
                if kind == b"Z":  # the COMMIT's answer is complete: drop it, cut
                    if st.arm is not None and st.arm.on_cut is not None:
                        st.arm.on_cut()
                    return
                continue
            client.write(head + body)
            await client.drain()
