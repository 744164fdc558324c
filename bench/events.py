"""Celery task events, received on a thread: how the bench knows that a drain ended
(and which worker took which session) without touching the bench database.

The worker app sends task events (``worker_send_task_events``), and so does the
no-op app, which copies its settings. A ``TaskEvents`` binds its own event queue on
the bench's Redis db before anything is released, counts ``task-succeeded`` and
``task-failed`` events, and at the moment the count reaches a target it reads the
watched worker's CPU time, so the CPU window closes when the last task ended, not
when the bench got round to look.

The drains count task ends from the worker's log instead (``TaskLog``): see there.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from datetime import UTC, datetime
from typing import Any

from celery import Celery

from bench.harness import Proc, cpu_seconds

DONE = ("task-succeeded", "task-failed")


class TaskEvents:
    def __init__(self, broker_url: str) -> None:
        self.app = Celery("turnkeep-bench-events", broker=broker_url, set_as_current=False)
        self._cond = threading.Condition()
        self._ready = threading.Event()
        self._receiver: Any = None
        self._thread: threading.Thread | None = None
        self.error: BaseException | None = None
        self.reset()

    # -- counting ------------------------------------------------------------------

    def reset(self, target: int = 0, pid: int | None = None) -> None:
        """Count from zero; when ``target`` tasks ended, note the time and ``pid``'s CPU."""
        with self._cond:
            self.done = 0
            self.failed = 0
            self.target = target
            self.pid = pid
            self.last_ts: float | None = None  # the worker's clock at the last task end
            self.at_target: tuple[float, float] | None = None  # (worker ts, CPU s)
            self.received: list[dict[str, Any]] = []

    def _on_event(self, event: dict[str, Any]) -> None:
        kind = event.get("type", "")
        with self._cond:
            if kind == "task-received":
                self.received.append(event)
            if kind not in DONE:
                return
            self.done += 1
            self.failed += kind == "task-failed"
            self.last_ts = float(event.get("timestamp") or time.time())
            if self.target and self.done == self.target:
                cpu = cpu_seconds(self.pid) if self.pid else float("nan")
                self.at_target = (self.last_ts, cpu)
            self._cond.notify_all()

    def wait(self, n: int, timeout: float) -> bool:
        """Until ``n`` tasks ended since the last reset; False on timeout."""
        end = time.monotonic() + timeout
        with self._cond:
            while self.done < n:
                left = end - time.monotonic()
                if left <= 0 or self.error is not None:
                    return False
                self._cond.wait(min(left, 0.5))
        return True

    def holder_of(self, session: str, since: float = 0.0) -> str | None:
        """The node name of the worker that received a task for ``session``."""
        with self._cond:
            for e in reversed(self.received):
                if session in str(e.get("args", "")) and float(e.get("timestamp", 0)) >= since:
                    return str(e.get("hostname"))
        return None

    # -- the receiver thread -----------------------------------------------------------

    def start(self, timeout: float = 10.0) -> TaskEvents:
        ready = self._ready
        base = self.app.events.Receiver

        class Receiver(base):  # type: ignore[misc, valid-type]
            def on_consume_ready(self, *args: Any, **kwargs: Any) -> None:
                super().on_consume_ready(*args, **kwargs)
                ready.set()  # our queue is declared and bound: no event is missed now

        def run() -> None:
            try:
                with self.app.connection_for_read() as conn:
                    self._receiver = Receiver(conn, handlers={"*": self._on_event})
                    self._receiver.capture(limit=None, timeout=None, wakeup=False)
            except BaseException as exc:  # reported by wait() and start()
                self.error = exc
                ready.set()

        self._thread = threading.Thread(target=run, name="bench-task-events", daemon=True)
        self._thread.start()
        if not ready.wait(timeout) or self.error is not None:
            raise RuntimeError(f"the Celery event receiver did not start: {self.error!r}")
        return self

    def stop(self) -> None:
        if self._receiver is not None:
            self._receiver.should_stop = True
        if self._thread is not None:
            self._thread.join(timeout=5)
        with contextlib.suppress(Exception):
            self.app.close()

    def __enter__(self) -> TaskEvents:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class TaskLog:
    """Counts a worker's task ends from its own log: the lines Celery's tracer writes
    for each (``Task <name>[<id>] succeeded in …`` or ``… raised …``), from where the
    log stood when the block was entered. The same counting interface as
    ``TaskEvents`` (``reset``, ``wait``, ``done``, ``failed``, ``at_target``).

    Why not the events: on this machine the Celery event stream drops events of a
    burst (a 4,000-task drain counted 2,109 of them, every task done; nudging the
    receiver with more traffic did not bring the rest), while the worker's log line
    of each task end is written before the next task starts."""

    def __init__(self, proc: Proc, task: str) -> None:
        self.proc, self.task = proc, task
        self._offset = 0
        self._tail = b""
        self.reset()

    def __enter__(self) -> TaskLog:
        self._offset = self.proc.log.stat().st_size if self.proc.log.exists() else 0
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def reset(self, target: int = 0, pid: int | None = None) -> None:
        self.done = self.failed = 0
        self.target, self.pid = target, pid
        self.at_target: tuple[float, float] | None = None

    def _ends(self) -> list[tuple[float, bool]]:
        """(the worker's clock, failed) of each task end logged since the last read."""
        with self.proc.log.open("rb") as fh:
            fh.seek(self._offset)
            chunk = fh.read()
        self._offset += len(chunk)
        lines = (self._tail + chunk).split(b"\n")
        self._tail = lines.pop()  # a line still being written
        out = []
        for raw in lines:
            line = raw.decode("utf-8", errors="replace")
            if f"Task {self.task}[" not in line:
                continue
            ok, bad = "] succeeded in " in line, "] raised " in line
            if not (ok or bad):
                continue
            out.append((_log_time(line), bad))
        return out

    def wait(self, n: int, timeout: float) -> bool:
        """Until ``n`` tasks ended since the last reset; False on timeout."""
        end = time.monotonic() + timeout
        while self.done < n:
            for at, bad in self._ends():
                self.done += 1
                self.failed += bad
                if self.target and self.done == self.target:
                    cpu = cpu_seconds(self.pid) if self.pid else float("nan")
                    self.at_target = (at, cpu)
            if self.done >= n:
                break
            if time.monotonic() > end:
                return False
            time.sleep(0.005)
        return True


def _log_time(line: str) -> float:
    """When a log line was written: its JSON ``ts`` (UTC, milliseconds), else now."""
    if line.startswith("{"):
        with contextlib.suppress(ValueError, KeyError, TypeError):
            ts = json.loads(line)["ts"]
            return datetime.strptime(ts, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC).timestamp()
    return time.time()
