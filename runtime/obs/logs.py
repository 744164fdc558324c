"""Log lines: one JSON object a line (the default) or plain text
(``TURNKEEP_LOG_FORMAT=json|text``), each carrying the ids of the turn that wrote it.

A JSON line holds ``ts`` (UTC, ISO 8601), ``level``, ``logger``, ``message``, the ids
bound where it was written (``tenant``, ``session``, ``turn``, ``step``, ``fence``,
``attempt``: never content) and ``exc`` (the traceback) when there is one. A text line
is ``time level logger: message`` and the ids in brackets.

The ids come from context variables: the executor binds them (``bound``) as it takes a
session's lease, starts a turn and runs each step. Context variables are per thread,
and Celery's threads pool runs each task on a thread of its own, so two turns of one
process never see each other's ids. (A tool function runs on a thread of its own,
worker/tools.py, which starts with an empty context: its lines carry no ids.)

Redaction happens before any of this: runtime/obs/redact.py's record factory redacts a
record's message, arguments and traceback when the record is made, so whatever
handler and format a line ends up in, it holds no secret.

Who calls what: the worker and beat format Celery's own handlers (worker/app.py, on
Celery's ``after_setup_logger`` signals, so Celery keeps its levels, its log file
option and its stdout redirection); the API formats uvicorn's handlers and gives the
root logger one on stderr (``configure``, from api/app.py).
"""

from __future__ import annotations

import json
import logging
import sys
import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

#: the ids a line may carry, in the order a text line shows them
FIELDS = ("tenant", "session", "turn", "step", "fence", "attempt")
FORMATS = ("json", "text")

_ids: ContextVar[Mapping[str, object] | None] = ContextVar("turnkeep_log_ids", default=None)


@contextmanager
def bound(**ids: object) -> Iterator[None]:
    """Every line this thread writes in the block carries ``ids`` (None values are
    left out), on top of those bound around it."""
    outer = _ids.get() or {}
    token = _ids.set({**outer, **{k: v for k, v in ids.items() if v is not None}})
    try:
        yield
    finally:
        _ids.reset(token)


def current() -> Mapping[str, object]:
    """The ids bound in this thread now."""
    return _ids.get() or {}


def _ts(record: logging.LogRecord) -> str:
    seconds = int(record.created)
    millis = int((record.created - seconds) * 1000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{millis:03d}Z"


class JsonFormatter(logging.Formatter):
    """One JSON object a line (see the module docstring)."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "ts": _ts(record),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        line.update(current())
        if record.exc_info:
            # exc_text: the traceback as runtime/obs/redact.py left it, when it had to
            line["exc"] = record.exc_text or self.formatException(record.exc_info)
        elif record.exc_text:
            line["exc"] = record.exc_text
        if record.stack_info:
            line["stack"] = record.stack_info
        return json.dumps(line, ensure_ascii=False, default=str)


class TextFormatter(logging.Formatter):
    """``time level logger: message [tenant=… session=…]``."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s: %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record)
        ids = current()
        if not ids:
            return text
        tail = " ".join(f"{k}={ids[k]}" for k in FIELDS if k in ids)
        head, sep, rest = text.partition("\n")  # after the message, before a traceback
        return f"{head} [{tail}]{sep}{rest}"


def formatter(fmt: str) -> logging.Formatter:
    """The formatter of ``fmt`` (``json`` or ``text``)."""
    if fmt not in FORMATS:
        raise ValueError(f"log format must be one of {FORMATS}, not {fmt!r}")
    return JsonFormatter() if fmt == "json" else TextFormatter()


def use(logger: logging.Logger, fmt: str) -> None:
    """Format every handler ``logger`` has with ``fmt``."""
    for handler in logger.handlers:
        handler.setFormatter(formatter(fmt))


class _Handler(logging.StreamHandler):  # type: ignore[type-arg]
    """The handler ``configure`` gives the root logger (told apart by its type)."""


def configure(fmt: str, *, loggers: Iterable[str] = ()) -> None:
    """A process's logging in ``fmt``: the root logger gets a handler on stderr (once)
    and the handlers of ``loggers`` (e.g. uvicorn's) are formatted alike. Levels are
    left as they are."""
    root = logging.getLogger()
    ours = [h for h in root.handlers if isinstance(h, _Handler)]
    if not ours:
        handler = _Handler(sys.stderr)
        root.addHandler(handler)
        ours = [handler]
    for handler in ours:
        handler.setFormatter(formatter(fmt))
    for name in loggers:
        use(logging.getLogger(name), fmt)
