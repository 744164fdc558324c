"""py-spy, when installed in the venv (``.venv/bin/pip install py-spy``): a sampling
profile of a worker over a drain (``record --gil``: CPU, by the thread holding the
GIL), and thread dumps classified by what each thread is doing."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

EXE = Path(sys.executable).with_name("py-spy")

PRODUCT_DIRS = ("worker/", "store/", "runtime/", "recovery/", "api/")
LIBRARIES = (
    "sqlalchemy",
    "psycopg",
    "redis",
    "kombu",
    "celery",
    "billiard",
    "jsonschema",
    "json",
    "logging",
    "threading",
    "concurrent",
    "uuid",
    "pydantic",
)


def available() -> bool:
    return EXE.exists()


class Recording:
    """``py-spy record`` of one process until ``stop()``; the raw (collapsed) file."""

    def __init__(self, pid: int, out: Path, rate: int = 250) -> None:
        out.parent.mkdir(parents=True, exist_ok=True)
        self.out = out
        self.popen = subprocess.Popen(
            [
                str(EXE),
                "record",
                "--pid",
                str(pid),
                "--rate",
                str(rate),
                "--format",
                "raw",
                "--output",
                str(out),
                "--gil",
                "--nonblocking",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        time.sleep(1.0)  # let it attach

    def stop(self) -> dict[str, Any] | None:
        self.popen.send_signal(signal.SIGINT)
        try:
            self.popen.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(self.popen.pid, signal.SIGKILL)
            self.popen.wait(timeout=5)
        return summarize(self.out) if self.out.exists() else None


def _frame(frame: str) -> tuple[str, str]:
    """('func', 'path') of one py-spy raw frame 'func (path:line)'."""
    func, _, where = frame.rpartition(" (")
    return func, where.rsplit(":", 1)[0]


def _layer(frames: list[tuple[str, str]]) -> str:
    """The innermost known layer of a stack: the library (or our code) on top of it."""
    for _, where in reversed(frames):
        # py-spy names files relative to their sys.path entry: "psycopg/cursor.py"
        top_name = where.split("/", 1)[0].removesuffix(".py")
        if top_name in LIBRARIES:
            return top_name
        if where.startswith(PRODUCT_DIRS):
            return "turnkeep"
    return "other"


def summarize(path: Path, top: int = 15) -> dict[str, Any]:
    """Self time by leaf function and by layer, inclusive time by product function,
    as % of samples."""
    self_t: dict[str, int] = {}
    libs: dict[str, int] = {}
    ours: dict[str, int] = {}
    total = 0
    for line in path.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not count.isdigit() or not stack:
            continue
        k = int(count)
        total += k
        frames = [_frame(f) for f in stack.split(";")]
        func, where = frames[-1]
        leaf = f"{func} ({where})"
        self_t[leaf] = self_t.get(leaf, 0) + k
        layer = _layer(frames)
        libs[layer] = libs.get(layer, 0) + k
        for name in {f"{fn} ({w})" for fn, w in frames if w.startswith(PRODUCT_DIRS)}:
            ours[name] = ours.get(name, 0) + k

    def pct(d: dict[str, int], n: int) -> list[tuple[str, float]]:
        ranked = sorted(d.items(), key=lambda kv: -kv[1])[:n]
        return [(name, round(100.0 * v / max(1, total), 1)) for name, v in ranked]

    return {
        "file": str(path),
        "samples": total,
        "self": pct(self_t, top),
        "by_layer": pct(libs, len(LIBRARIES) + 2),
        "product_inclusive": pct(ours, top),
    }


DUMP_CLASSES = (
    ("sqlalchemy/pool/", "waiting for a pooled Postgres connection"),
    ("store/db.py", "in the store's connection pool"),
    ("psycopg/", "in a Postgres round trip"),
    ("redis/", "in a Redis round trip"),
    ("runtime/providers/demo_model.py", "in the model call (demo sleep)"),
    ("worker/heartbeat.py", "lease heartbeat thread"),
    ("concurrent/futures/thread.py", "idle pool thread"),
    ("kombu/", "celery/kombu internals"),
    ("celery/", "celery/kombu internals"),
)


def summarize_dump(text: str) -> dict[str, int]:
    """Threads of a ``py-spy dump`` by what they are doing (innermost known frame)."""
    out: dict[str, int] = {}
    for block in text.split("\nThread ")[1:]:
        frames = [ln.strip() for ln in block.splitlines()[1:] if ln.startswith("    ")]
        label = "other: " + (frames[0] if frames else "?")
        for frame in frames:
            where = frame.rpartition(" (")[2]
            hit = next((lab for key, lab in DUMP_CLASSES if where.startswith(key)), None)
            if hit:
                label = hit
                break
        out[label] = out.get(label, 0) + 1
    return dict(sorted(out.items(), key=lambda kv: -kv[1]))


def dump(pid: int) -> str:
    text = ""
    for _ in range(3):  # a non-blocking read of a changing thread list can come back
        try:  # empty: try again at once
            done = subprocess.run(
                [str(EXE), "dump", "--pid", str(pid), "--nonblocking"],
                capture_output=True,
                text=True,
                timeout=20,
            )
            text = done.stdout or done.stderr
        except subprocess.TimeoutExpired:
            continue
        if summarize_dump(text):
            break
    return text


def dumps_later(
    pid: int, delays: list[float], prefix: Path
) -> tuple[list[dict[str, Any]], threading.Thread]:
    """Dump the process's threads at ``delays`` seconds from now, on a thread."""
    found: list[dict[str, Any]] = []

    def go() -> None:
        t0 = time.monotonic()
        for i, d in enumerate(delays):
            time.sleep(max(0.0, t0 + d - time.monotonic()))
            text = dump(pid)
            path = prefix.with_name(f"{prefix.name}-{i}.txt")
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
            at = round(time.monotonic() - t0, 2)
            found.append({"at_s": at, "file": str(path), "threads": summarize_dump(text)})

    th = threading.Thread(target=go, daemon=True)
    th.start()
    return found, th
