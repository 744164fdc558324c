"""Real processes for integration and chaos tests: celery workers, beat, redis-server.

Each process gets its own log file under the test's tmp dir; on a failure the
logs are printed, so a crash test that fails says why.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from turnkeep.embedded import which_redis_server

ROOT = Path(__file__).resolve().parent.parent
CELERY = str(Path(sys.executable).with_name("celery"))


def free_port() -> int:
    """A port nobody listened on a moment ago. Racy (another process may take it before
    the caller binds it): a server the tests start binds and holds its port
    (``listening_socket``) or is started again on another one when it lost the race
    (``on_free_port``); use it bare only for a port that is meant to stay closed."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def listening_socket(host: str = "127.0.0.1") -> socket.socket:
    """A TCP socket bound to a free port of ``host``, for a server to take over (its fd
    passed on): the port is held from the start, no other process can take it."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, 0))
    return sock


class PortTaken(Exception):
    """A server could not bind the port it was given: another process took it first."""


#: what the servers the tests start say when their port is taken
PORT_TAKEN = ("address already in use", "could not bind")

T = TypeVar("T")


def on_free_port(start: Callable[[int], T], *, tries: int = 5) -> T:
    """``start(port)`` on a free port; on ``PortTaken``, again on another one."""
    for _ in range(tries - 1):
        try:
            return start(free_port())
        except PortTaken:
            continue
    return start(free_port())


def wait_for(
    pred: Callable[[], object], timeout: float, interval: float = 0.1, what: str = "condition"
) -> object:
    """Poll until ``pred()`` is truthy; AssertionError after ``timeout`` seconds."""
    end = time.monotonic() + timeout
    while True:
        value = pred()
        if value:
            return value
        if time.monotonic() > end:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)


@dataclass
class Proc:
    name: str
    popen: subprocess.Popen[bytes]
    log: Path
    #: base URL of a process that serves HTTP (``Procs.api``); empty otherwise
    url: str = ""
    #: the TCP port it serves on (``Procs.api``, ``Procs.redis_server``); 0 otherwise
    port: int = 0

    @property
    def pid(self) -> int:
        return self.popen.pid

    def alive(self) -> bool:
        return self.popen.poll() is None

    def signal(self, sig: int) -> None:
        if self.alive():
            os.kill(self.pid, sig)

    def stop(self, timeout: float = 15.0) -> None:
        if not self.alive():
            return
        try:
            os.kill(self.pid, signal.SIGCONT)
            self.popen.send_signal(signal.SIGTERM)
            self.popen.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.popen.kill()
            self.popen.wait(timeout=5)

    def text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""


@dataclass
class Procs:
    """Starts processes with a shared base environment and stops them all at the end."""

    env: dict[str, str]
    logdir: Path
    started: list[Proc] = field(default_factory=list)

    def _spawn(
        self,
        name: str,
        argv: list[str],
        extra: dict[str, str] | None,
        pass_fds: tuple[int, ...] = (),
    ) -> Proc:
        env = {**os.environ, **self.env, **(extra or {})}
        env["PYTHONPATH"] = str(ROOT)
        log = self.logdir / f"{name}-{len(self.started)}.log"
        fh = log.open("wb")
        popen = subprocess.Popen(
            argv,
            cwd=ROOT,
            env=env,
            stdout=fh,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            pass_fds=pass_fds,
        )
        proc = Proc(name, popen, log)
        self.started.append(proc)
        return proc

    def worker(
        self,
        extra: dict[str, str] | None = None,
        *,
        concurrency: int = 4,
        wait_ready: bool = True,
        name: str = "worker",
        pool: str = "threads",
        wrap: list[str] | None = None,
        metrics: bool = False,
    ) -> Proc:
        """A celery worker. ``pool``: threads (the default) or prefork; ``wrap``: an argv
        prefix that execs the worker (``["ip", "netns", "exec", NS]``); ``metrics``: it
        serves its metrics on a free port (``proc.port``), started again on another
        one when that was taken before it bound it."""
        if metrics:
            return on_free_port(
                lambda port: self._metrics_worker(
                    {**(extra or {}), "TURNKEEP_METRICS_PORT": str(port)},
                    port,
                    concurrency=concurrency,
                    name=name,
                    pool=pool,
                    wrap=wrap,
                )
            )
        hostname = f"{name}{len(self.started)}@%h"
        # celery takes "--pool prefork" for its CLI default and then prefers the app's
        # worker_pool (threads); "processes" is its alias that is taken as given
        pool = "processes" if pool == "prefork" else pool
        proc = self._spawn(
            name,
            [
                *(wrap or []),
                CELERY,
                "-A",
                "turnkeep.worker.app",
                "worker",
                "-l",
                "INFO",
                "--pool",
                pool,
                "-c",
                str(concurrency),
                "-n",
                hostname,
                "--without-gossip",
                "--without-mingle",
            ],
            extra,
        )
        if wait_ready:
            wait_for(lambda: "ready." in proc.text() or not proc.alive(), 60, what=f"{name} ready")
            assert proc.alive(), proc.text()
        return proc

    def _metrics_worker(self, extra: dict[str, str], port: int, **kw: Any) -> Proc:
        proc = self.worker(extra, **kw)
        # worker/metrics.py logs this and runs on without metrics when its port is taken
        if "metrics not served" in proc.text():
            proc.stop()
            raise PortTaken(proc.text())
        proc.port = port
        return proc

    def beat(self, extra: dict[str, str] | None = None) -> Proc:
        sched = self.logdir / f"beat-{len(self.started)}.schedule"
        return self._spawn(
            "beat",
            [CELERY, "-A", "turnkeep.worker.app", "beat", "-l", "INFO", "-s", str(sched)],
            extra,
        )

    def redis_server(self, port: int | None = None, *, bind: str = "127.0.0.1") -> Proc:
        """A private redis-server (on a free port unless ``port``; ``proc.port``);
        ``bind``: space-separated addresses to listen on."""
        if port is None:
            return on_free_port(lambda p: self.redis_server(p, bind=bind))
        proc = self._spawn(
            "redis",
            [
                which_redis_server(),
                "--port",
                str(port),
                "--bind",
                *bind.split(),
                "--save",
                "",
                "--appendonly",
                "no",
                # a test binds a veth address of its own network namespace: let the
                # worker in there in without a password
                *([] if bind == "127.0.0.1" else ["--protected-mode", "no"]),
            ],
            None,
        )
        proc.port = port
        import redis

        client = redis.Redis(port=port)
        try:
            # ours, not a server another process started on the port in the meantime
            wait_for(lambda: _serves(client, proc) or not proc.alive(), 10, what="redis-server")
        finally:
            client.close()
        if not proc.alive():
            if any(s in proc.text().lower() for s in PORT_TAKEN):
                raise PortTaken(proc.text())
            raise AssertionError(f"redis-server exited: {proc.text()}")
        return proc

    def api(self, extra: dict[str, str] | None = None, *, port: int | None = None) -> Proc:
        """``uvicorn turnkeep.api.app:app`` as a subprocess on 127.0.0.1; waits for /healthz. On
        ``port`` if given, else on a socket bound here and handed over (``--fd``), so
        no other process can take the port in between."""
        uvicorn = str(Path(sys.executable).with_name("uvicorn"))
        sock = listening_socket() if port is None else None
        where = ["--port", str(port)] if sock is None else ["--fd", str(sock.fileno())]
        try:
            proc = self._spawn(
                "api",
                [
                    uvicorn,
                    "turnkeep.api.app:app",
                    "--host",
                    "127.0.0.1",
                    *where,
                    "--log-level",
                    "warning",
                ],
                extra,
                pass_fds=() if sock is None else (sock.fileno(),),
            )
            proc.port = port or int(sock.getsockname()[1])  # type: ignore[union-attr]
        finally:
            if sock is not None:
                sock.close()  # the server holds its own copy
        proc.url = f"http://127.0.0.1:{proc.port}"
        wait_for(
            lambda: _http_ok(proc.url + "/healthz") or not proc.alive(), 30, what="api /healthz"
        )
        assert proc.alive(), proc.text()
        return proc

    def stop_all(self) -> None:
        for proc in reversed(self.started):
            proc.stop()

    def dump_logs(self, tail: int = 60) -> str:
        out = []
        for proc in self.started:
            lines = proc.text().splitlines()[-tail:]
            out.append(f"===== {proc.name} pid={proc.pid} log={proc.log}\n" + "\n".join(lines))
        return "\n".join(out)


def children(pid: int) -> list[int]:
    """The pids whose parent is ``pid``, from a scan of /proc (no psutil)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # the comm field may hold spaces and parentheses: split after the last ")"
        fields = stat[stat.rfind(")") + 2 :].split()
        if len(fields) > 1 and int(fields[1]) == pid:
            found.append(int(entry.name))
    return sorted(found)


def group_members(pgid: int) -> list[int]:
    """The live pids of process group ``pgid`` (the group ``Procs`` made for a process)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2 :].split()
        if len(fields) > 2 and int(fields[2]) == pgid and fields[0] != "Z":
            found.append(int(entry.name))
    return sorted(found)


def proc_state(pid: int) -> str:
    """The one-letter state of ``pid`` (R, S, T for stopped, Z...), "" when gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return ""
    return stat[stat.rfind(")") + 2 :].split()[0]


def kill_group(pgid: int) -> None:
    """SIGKILL what is left of the process group ``Procs`` started as ``pgid``."""
    if not group_members(pgid):
        return
    try:
        os.killpg(pgid, signal.SIGCONT)
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _http_ok(url: str) -> bool:
    import urllib.request

    try:
        with urllib.request.urlopen(url, timeout=2) as resp:
            return bool(resp.status == 200)
    except Exception:
        return False


def _serves(client: object, proc: Proc) -> bool:
    """``client``'s server answers and is ``proc``."""
    try:
        return int(client.info("server")["process_id"]) == proc.pid  # type: ignore[attr-defined]
    except Exception:
        return False


def at_once(n: int, fn: Callable[[int], object], *, timeout: float = 60) -> list[object]:
    """``fn(0)`` .. ``fn(n - 1)`` on n threads released together by a barrier; each
    one's result, or the exception it raised, in order."""
    barrier = threading.Barrier(n)
    results: list[object] = [RuntimeError("not run")] * n

    def one(i: int) -> None:
        try:
            barrier.wait(10)
            results[i] = fn(i)
        except BaseException as exc:
            results[i] = exc

    threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout)
    return results
