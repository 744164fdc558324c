"""Log lines (runtime/obs/logs.py): JSON objects carrying the ids bound where they were
written, per thread; the text format; and redaction (runtime/obs/redact.py) still applied
to every record whatever the format."""

from __future__ import annotations

import io
import json
import logging
import threading
from collections.abc import Iterator

import pytest

from turnkeep.runtime.obs import logs, redact
from turnkeep.runtime.obs.redact import MARKER, Redactor

SECRET = "hunter2-correct-horse-battery"


def _capture(name: str, fmt: str) -> tuple[logging.Logger, io.StringIO]:
    buf = io.StringIO()
    handler = logging.StreamHandler(buf)
    logger = logging.getLogger(name)
    logger.handlers[:] = [handler]
    logger.propagate = False
    logger.setLevel(logging.INFO)
    logs.use(logger, fmt)
    return logger, buf


def _lines(buf: io.StringIO) -> list[dict[str, object]]:
    return [json.loads(line) for line in buf.getvalue().splitlines()]


@pytest.fixture
def installed() -> Iterator[None]:
    """``redact.install`` for one test, the process's factory restored afterwards."""
    factory, base, current = logging.getLogRecordFactory(), redact._base_factory, redact._current
    redact._base_factory = None
    yield
    logging.setLogRecordFactory(factory)
    redact._base_factory, redact._current = base, current


def test_a_json_line_carries_the_ids_bound_around_it() -> None:
    logger, buf = _capture("turnkeep.test.logs.json", "json")
    logger.info("outside")
    with logs.bound(tenant="t1", session="s1", fence=7):
        with logs.bound(turn="u1", attempt=2, step=None):
            logger.warning("step %d done", 3)
        logger.info("between turns")
    (outside, inside, between) = _lines(buf)
    assert outside["message"] == "outside" and "tenant" not in outside
    assert inside == {
        "ts": inside["ts"],
        "level": "WARNING",
        "logger": "turnkeep.test.logs.json",
        "message": "step 3 done",
        "tenant": "t1",
        "session": "s1",
        "fence": 7,
        "turn": "u1",
        "attempt": 2,
    }
    assert str(inside["ts"]).endswith("Z")
    assert "turn" not in between and between["session"] == "s1"
    assert logs.current() == {}


def test_threads_never_see_each_others_ids() -> None:
    logger, buf = _capture("turnkeep.test.logs.threads", "json")
    barrier = threading.Barrier(2)

    def turn(name: str) -> None:
        with logs.bound(tenant="t", session=name, turn=name):
            barrier.wait(5)  # both bound at once
            logger.info("ran %s", name)

    threads = [threading.Thread(target=turn, args=(n,)) for n in ("a", "b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(5)
    by_message = {line["message"]: line for line in _lines(buf)}
    assert by_message["ran a"]["turn"] == "a" and by_message["ran b"]["turn"] == "b"


def test_a_traceback_goes_in_one_json_line() -> None:
    logger, buf = _capture("turnkeep.test.logs.exc", "json")
    try:
        raise ValueError("bad value")
    except ValueError:
        logger.exception("failed")
    assert len(buf.getvalue().splitlines()) == 1
    (line,) = _lines(buf)
    assert line["message"] == "failed" and "ValueError: bad value" in str(line["exc"])


def test_the_text_format_puts_the_ids_after_the_message() -> None:
    logger, buf = _capture("turnkeep.test.logs.text", "text")
    with logs.bound(tenant="t1", turn="u1", session="s1"):
        logger.info("hello")
    line = buf.getvalue().rstrip("\n")
    assert line.endswith("INFO turnkeep.test.logs.text: hello [tenant=t1 session=s1 turn=u1]")


def test_an_unknown_format_is_refused() -> None:
    with pytest.raises(ValueError, match="log format"):
        logs.formatter("yaml")


def test_a_secret_is_redacted_in_json_lines(installed: None) -> None:
    redact.install(Redactor([SECRET]))
    logger, buf = _capture("turnkeep.test.logs.redact", "json")
    with logs.bound(tenant="t1"):
        logger.warning("token %s leaked", SECRET)
        logger.warning(f"inline {SECRET}")
        try:
            raise RuntimeError(f"boom {SECRET}")
        except RuntimeError:
            logger.exception("failed with %r", {"key": SECRET})
    text = buf.getvalue()
    assert SECRET not in text, text
    first, second, third = _lines(buf)
    assert first["message"] == f"token {MARKER} leaked" and first["tenant"] == "t1"
    assert second["message"] == f"inline {MARKER}"
    assert MARKER in str(third["message"]) and f"boom {MARKER}" in str(third["exc"])


def test_configure_gives_the_root_logger_one_handler_of_ours() -> None:
    root = logging.getLogger()
    before = list(root.handlers)
    try:
        logs.configure("json")
        logs.configure("text")  # again: formats, never stacks
        ours = [h for h in root.handlers if h not in before]
        assert len(ours) == 1 and isinstance(ours[0].formatter, logs.TextFormatter)
    finally:
        root.handlers[:] = before
