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
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CELERY = str(Path(sys.executable).with_name("celery"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for(pred: Callable[[], object], timeout: float, interval: float = 0.1,
             what: str = "condition") -> object:
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

    def _spawn(self, name: str, argv: list[str], extra: dict[str, str] | None) -> Proc:
        env = {**os.environ, **self.env, **(extra or {})}
        env["PYTHONPATH"] = str(ROOT)
        log = self.logdir / f"{name}-{len(self.started)}.log"
        fh = log.open("wb")
        popen = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=fh, stderr=subprocess.STDOUT,
                                 start_new_session=True)
        proc = Proc(name, popen, log)
        self.started.append(proc)
        return proc

    def worker(self, extra: dict[str, str] | None = None, *, concurrency: int = 4,
               wait_ready: bool = True, name: str = "worker") -> Proc:
        hostname = f"{name}{len(self.started)}@%h"
        proc = self._spawn(name, [CELERY, "-A", "worker.app", "worker", "-l", "INFO",
                                  "--pool", "threads", "-c", str(concurrency), "-n", hostname,
                                  "--without-gossip", "--without-mingle"], extra)
        if wait_ready:
            wait_for(lambda: "ready." in proc.text() or not proc.alive(), 60,
                     what=f"{name} ready")
            assert proc.alive(), proc.text()
        return proc

    def beat(self, extra: dict[str, str] | None = None) -> Proc:
        sched = self.logdir / f"beat-{len(self.started)}.schedule"
        return self._spawn("beat", [CELERY, "-A", "worker.app", "beat", "-l", "INFO",
                                    "-s", str(sched)], extra)

    def redis_server(self, port: int) -> Proc:
        proc = self._spawn("redis", ["redis-server", "--port", str(port), "--bind", "127.0.0.1",
                                     "--save", "", "--appendonly", "no"], None)
        import redis

        client = redis.Redis(port=port)
        wait_for(lambda: _ping(client), 10, what="redis-server")
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


def _ping(client: object) -> bool:
    try:
        return bool(client.ping())  # type: ignore[attr-defined]
    except Exception:
        return False
