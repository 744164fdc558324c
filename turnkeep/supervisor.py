"""The processes ``turnkeep dev`` starts, and their one shutdown.

Each child runs in a session, so a process group, of its own (a terminal's Ctrl-C reaches
only ``turnkeep dev``), and is tracked with that group: it is signalled, waited for and
killed as a group, so nothing it started outlives it.

The shutdown is one sequence, run once: SIGTERM to every child's group, their grace to
exit (a worker's warm shutdown: TURNKEEP_WORKER_SHUTDOWN_GRACE), SIGKILL to each group
still there, and only then the embedded servers, so that no worker loses its Redis or
Postgres in the middle of its shutdown. The signal handler only sets state: the first
SIGTERM or Ctrl-C raises KeyboardInterrupt once, to leave the demo or the wait; any later
one hurries the shutdown (what is left is SIGKILLed at once) and never interrupts it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

from turnkeep.embedded import EmbeddedServices

#: after a group's SIGKILL, how long to wait for it to be gone
KILL_WAIT = 5.0
#: between two looks at the children while they stop
POLL = 0.1


@dataclass
class DevProcess:
    """A process ``turnkeep dev`` started, leader of its own process group."""

    name: str
    popen: subprocess.Popen[bytes]
    pgid: int

    def alive(self) -> bool:
        """Whether the process or anything left in its group is still there."""
        if self.popen.poll() is None:
            return True
        try:
            os.killpg(self.pgid, 0)  # the leader is reaped: the group lives on in others
        except ProcessLookupError:
            return False
        except PermissionError:  # a member another user owns: still there
            return True
        return True

    def signal(self, sig: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pgid, sig)


class Supervisor:
    """The children and the one shutdown of ``turnkeep dev``."""

    def __init__(self, grace: float) -> None:
        #: how long the children get, from their SIGTERM, before their SIGKILL
        self.grace = grace
        self.children: list[DevProcess] = []
        #: set by the first SIGTERM or SIGINT (or by the shutdown itself)
        self.requested = threading.Event()
        #: set by any signal after the first: the shutdown kills what is left at once
        self.hurry = threading.Event()
        self._stopping = False

    def install(self) -> None:
        """Handle SIGTERM and SIGINT (Ctrl-C) from now on, in this (the main) thread."""
        signal.signal(signal.SIGTERM, self._on_signal)
        signal.signal(signal.SIGINT, self._on_signal)

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        if self.requested.is_set():
            self.hurry.set()
            return
        self.requested.set()
        if not self._stopping:
            raise KeyboardInterrupt

    def start(self, name: str, argv: list[str], env: dict[str, str], log: Path) -> DevProcess:
        """Start ``argv`` in a session of its own, tracked from the moment it exists."""
        started: list[DevProcess] = []
        try:
            with log.open("ab") as out:
                popen = subprocess.Popen(
                    argv, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
                )
                # a new session: the child leads a process group whose id is its pid
                started.append(DevProcess(name, popen, popen.pid))
        finally:
            # tracked even when the first signal interrupts the start
            self.children.extend(started)
        return started[0]

    def stop(self, services: EmbeddedServices | None = None) -> None:
        """The shutdown: the children (SIGTERM, their grace, SIGKILL), then ``services``.
        Idempotent; a signal meanwhile only hurries it."""
        if self._stopping:
            return
        self._stopping = True
        self.requested.set()
        try:
            self._stop_children()
        finally:
            if services is not None:
                services.stop()

    def _stop_children(self) -> None:
        for child in self.children:
            if child.alive():
                child.signal(signal.SIGCONT)  # a stopped (^Z) process acts on SIGTERM too
                child.signal(signal.SIGTERM)
        self._wait(time.monotonic() + self.grace, hurried=True)
        left = [c for c in self.children if c.alive()]
        if left:
            print(f"killing what did not stop: {', '.join(c.name for c in left)}")
        for child in left:
            child.signal(signal.SIGKILL)
        self._wait(time.monotonic() + KILL_WAIT, hurried=False)

    def _wait(self, deadline: float, *, hurried: bool) -> None:
        """Until every child is gone, the deadline passes or (``hurried``) a signal
        hurries the shutdown."""
        while any(c.alive() for c in self.children) and time.monotonic() < deadline:
            if hurried and self.hurry.is_set():
                return
            time.sleep(POLL)
