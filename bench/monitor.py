"""A Redis ``MONITOR`` connection that counts the commands sent to one db: what every
client (API, worker, Celery, kombu) asked of Redis, seen from the server, so nothing
in the measured processes is patched or slowed.

The server reports each command a client sent as one line, ``<ts> [<db> <addr>]
"<NAME>" "<arg>" ...``, and each command a Lua script ran inside it as ``[<db>
lua]``: those are counted apart (``in_scripts``), never as round trips. An ``EVALSHA``
is named by the script it runs when that script is one of the product's (``lease.GRANT``
...), found by its SHA-1, so the breakdown says which script ran.
"""

from __future__ import annotations

import contextlib
import hashlib
import re
import threading
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import redis

#: ``1700000000.123456 [13 127.0.0.1:50000] "GET" "k"``; a script's own commands say
#: ``lua`` where a client's address would be
LINE = re.compile(r'^\d+\.\d+ \[(\d+) ([^\]]+)\] "([^"]*)"(.*)$')
#: the routing key of Celery's worker heartbeats (a timer's, never a turn's)
HEARTBEAT = "worker.heartbeat"
#: a live-event message's kind, as MONITOR shows it (its quotes escaped)
KIND = re.compile(r'^\{\\"kind\\":\\"(\w+)')


def script_names() -> dict[str, str]:
    """SHA-1 -> ``module.NAME`` of every Lua script of the store's lease and fair queue."""
    from turnkeep.store import fair, lease

    out: dict[str, str] = {}
    for module in (lease, fair):
        for name, value in vars(module).items():
            if name.isupper() and isinstance(value, str) and "redis.call" in value:
                sha = hashlib.sha1(value.encode()).hexdigest()
                out[sha] = f"{module.__name__.rsplit('.', 1)[-1]}.{name}"
    return out


@dataclass
class Commands:
    """What one window saw on the db: client commands by name (an ``EVALSHA`` of a
    known script as ``EVALSHA lease.GRANT``), and the commands scripts ran."""

    by_name: Counter[str] = field(default_factory=Counter)
    in_scripts: Counter[str] = field(default_factory=Counter)
    #: a ``PUBLISH``'s channel: ``events (<kind>)`` (a session's live feed, by the
    #: message's kind) or the exchange's name (Celery's events, kombu's fanout)
    published: Counter[str] = field(default_factory=Counter)

    @property
    def total(self) -> int:
        return sum(self.by_name.values())


class Monitor:
    """``with Monitor(url, db) as m: ...; m.commands``: every command sent to ``db``
    while the block ran (its last ones included: the monitor drains until it sees a
    marker it sent itself after the block)."""

    def __init__(self, base_url: str, db: int) -> None:
        self.base_url = base_url
        self.db = db
        self.commands = Commands()
        self._names = script_names()
        self._marker = f"bench-monitor-end-{id(self)}"
        self._ready = threading.Event()
        self._done = threading.Event()
        self._thread: threading.Thread | None = None
        self.error: BaseException | None = None

    def __enter__(self) -> Monitor:
        self._thread = threading.Thread(target=self._run, name="redis-monitor", daemon=True)
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("the Redis MONITOR connection did not start")
        return self

    def __exit__(self, *exc: Any) -> None:
        # a marker on db 0 (not the one counted) tells the reader it has seen everything
        # sent before this point
        marker = redis.Redis.from_url(f"{self.base_url}/0")
        try:
            marker.echo(self._marker)
        finally:
            marker.close()
        if not self._done.wait(10):
            raise RuntimeError("the Redis MONITOR connection did not see its end marker")
        if self.error is not None:
            raise RuntimeError(f"the Redis MONITOR failed: {self.error!r}")

    def _run(self) -> None:
        client = redis.Redis.from_url(f"{self.base_url}/0")
        try:
            with client.monitor() as mon:
                conn = mon.connection
                assert conn is not None
                self._ready.set()
                while True:
                    line = conn.read_response()
                    text = line.decode(errors="replace") if isinstance(line, bytes) else str(line)
                    if self._marker in text:
                        return
                    self._count(text)
        except BaseException as exc:  # reported by __exit__
            self.error = exc
            self._ready.set()
        finally:
            self._done.set()
            with contextlib.suppress(redis.RedisError):
                client.close()

    def _count(self, text: str) -> None:
        m = LINE.match(text)
        if m is None or int(m.group(1)) != self.db:
            return
        addr, name, rest = m.group(2), m.group(3).upper(), m.group(4)
        if addr == "lua":
            self.commands.in_scripts[name] += 1
            return
        args = re.findall(r'"((?:[^"\\]|\\.)*)"', rest)
        if name == "EVALSHA" and args:
            name = f"EVALSHA {self._names.get(args[0], args[0][:8])}"
        if name == "PUBLISH" and args:
            channel = args[0]
            if channel.endswith(HEARTBEAT):
                return  # a worker's pulse every 2 s, whatever it runs
            kind = KIND.search(args[1]) if len(args) > 1 else None
            live = f"events ({kind.group(1) if kind else '?'})"
            self.commands.published[live if ":events:" in channel else channel] += 1
        self.commands.by_name[name] += 1
