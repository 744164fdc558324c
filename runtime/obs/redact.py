"""Redaction: secrets become ``[REDACTED]`` before anything is stored, published or logged.

What is a secret: the literal values the operator lists (``TURNKEEP_REDACT_VALUES``, a
JSON list or comma-separated), every ``*_API_KEY`` in the environment (the provider
keys the registry reads), the webhook and stream-token secrets, the passwords of the
database, Redis and broker URLs; and the built-in ``PATTERNS``: ``sk-…`` and
``sk-ant-…`` keys, AWS access key ids, GitHub and Slack tokens, ``Bearer <token>`` and
PEM private key blocks. Literals shorter than ``MIN_LITERAL_CHARS`` are ignored (with
a warning): one would blank ordinary words everywhere.

Where it applies (one ``Redactor`` per process, built once from the settings):

- every checkpoint (worker/checkpoint.py): the event data, the turn's result, error
  and pending input, so the journal, ``turns`` and the committed events published
  from them never hold a secret (tool call arguments and tool results included);
- live model deltas (worker/steps/model.py), through a ``DeltaRedactor`` per model call
  that holds back just the tail that could still become a secret;
- every log record of the worker and API processes (``install``);
- API problem bodies (api/problems.py).

Not the admitted input of a turn, nor a person's answer to an input request: those
are the user's own, and the input is hashed for idempotency as given.

The next model call is built from the journal, so the model sees the redacted form
too, and a tool runs with its arguments as the journal holds them: a secret that
reached the model once is not handed back to it, nor passed on to a tool.
"""

from __future__ import annotations

import json
import logging
import os
import re
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from turnkeep.runtime.settings import Settings, get_settings

log = logging.getLogger(__name__)

MARKER = "[REDACTED]"
#: a shorter configured value is ignored: it would blank ordinary text
MIN_LITERAL_CHARS = 6
#: the most characters of a stream's tail searched for a pattern's beginning; every
#: built-in pattern's longest beginning that is not yet a match is far below it
PATTERN_HOLD = 200


@dataclass(frozen=True)
class Pattern:
    """A kind of secret: ``regex`` matches a whole one (a ``(?P<keep>…)`` prefix of it
    stays, e.g. ``Bearer ``); ``partial`` matches, up to the end of a text, any
    beginning of one that more text could complete: a stream holds that tail back."""

    name: str
    regex: str
    partial: str


def _begins(lead: str, rest: str = "") -> str:
    """A regex for any non-empty beginning of ``lead``, then (once it is whole) ``rest``."""
    out = rest
    for ch in reversed(lead):
        out = f"{re.escape(ch)}(?:{out})?" if out else re.escape(ch)
    return out


_SK_BODY = "[A-Za-z0-9_-]"
_TOKEN = "[A-Za-z0-9._~+/=-]"
_BEARER_REST = "[ \t]{0,16}" + _TOKEN + "*"

PATTERNS: tuple[Pattern, ...] = (
    Pattern(
        "private_key",
        # an unterminated block is redacted to the end: a cut key is still a key
        r"-----BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY-----(?s:.*?)"
        r"(?:-----END[A-Z0-9 ]{0,40}PRIVATE KEY-----|\Z)",
        _begins("-----BEGIN", "[A-Z0-9 -]{0,60}"),
    ),
    # OpenAI's sk-…, sk-proj-…, and Anthropic's sk-ant-…
    Pattern("sk_key", rf"(?<![A-Za-z0-9_-])sk-{_SK_BODY}{{20,}}", _begins("sk-", f"{_SK_BODY}*")),
    Pattern(
        "aws_access_key_id",
        r"(?<![A-Z0-9])(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Z0-9])",
        f"(?:{_begins('AKIA', '[A-Z0-9]{0,16}')}|{_begins('ASIA', '[A-Z0-9]{0,16}')})",
    ),
    Pattern(
        "github_token",
        r"(?<![A-Za-z0-9_])(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,})",
        f"(?:g(?:h(?:[pousr](?:_[A-Za-z0-9]*)?)?)?|{_begins('github_pat_', '[A-Za-z0-9_]*')})",
    ),
    Pattern(
        "slack_token",
        r"(?<![A-Za-z0-9])xox[abposr]-[A-Za-z0-9-]{10,}",
        "x(?:o(?:x(?:[abposr](?:-[A-Za-z0-9-]*)?)?)?)?",
    ),
    Pattern(
        "bearer",
        rf"(?P<keep>(?<![A-Za-z0-9])(?i:bearer)[ \t]{{1,16}}){_TOKEN}{{16,}}",
        f"(?i:{_begins('bearer', _BEARER_REST)})",
    ),
)


def parse_values(raw: str) -> list[str]:
    """``TURNKEEP_REDACT_VALUES``: a JSON list of strings, or comma-separated."""
    raw = raw.strip()
    if not raw:
        return []
    if raw.startswith("["):
        values = json.loads(raw)
        if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
            raise ValueError("TURNKEEP_REDACT_VALUES must be a JSON list of strings")
        return values
    return [v.strip() for v in raw.split(",")]


def configured_values(settings: Settings, environ: Mapping[str, str] | None = None) -> list[str]:
    """Every literal secret a process knows of: the configured ones, the ``*_API_KEY``
    variables of the environment, the signing secrets and the URLs' passwords."""
    env = os.environ if environ is None else environ
    values = parse_values(settings.obs.redact_values.get_secret_value())
    values += [v for k, v in env.items() if k.upper().endswith("_API_KEY")]
    values += [settings.webhooks.secret.get_secret_value()]
    values += [settings.auth.stream_token_secret.get_secret_value()]
    # the chat bridges' (docs/bridges.md): a bot token also matches the xox… pattern
    values += [settings.slack.signing_secret.get_secret_value()]
    values += [settings.slack.bot_token.get_secret_value()]
    values += [settings.bridge.secret.get_secret_value()]
    for url in (settings.database.url, settings.redis.url, settings.broker.url):
        try:
            values.append((urlsplit(url).password or "") if url else "")
        except ValueError:
            continue
    return values


class Redactor:
    """Replaces secrets by ``marker``; literals longest first, then ``patterns``.
    Thread-safe (compiled once, never changed)."""

    def __init__(
        self,
        values: Iterable[str] = (),
        *,
        patterns: Iterable[Pattern] = PATTERNS,
        marker: str = MARKER,
    ) -> None:
        literals = {v for v in values if v.strip()}
        short = {v for v in literals if len(v) < MIN_LITERAL_CHARS or v in marker}
        if short:
            log.warning("%d redact value(s) too short to redact; ignored", len(short))
        self.literals = sorted(literals - short, key=lambda v: (-len(v), v))
        self.patterns = tuple(patterns)
        self.marker = marker
        parts = []
        if self.literals:
            parts.append("(?P<lit>" + "|".join(map(re.escape, self.literals)) + ")")
        #: a pattern's group -> the group of the prefix it keeps
        self._keep: dict[str, str] = {}
        for i, p in enumerate(self.patterns):
            if "(?P<keep>" in p.regex:
                self._keep[f"p{i}"] = f"k{i}"
            parts.append(f"(?P<p{i}>" + p.regex.replace("(?P<keep>", f"(?P<k{i}>") + ")")
        never = "(?!)"  # nothing to find: a regex that matches nowhere
        self._any = re.compile("|".join(parts) or never)
        partials = "|".join(f"(?:{p.partial})" for p in self.patterns)
        self._partial = re.compile(f"(?:{partials})\\Z" if partials else never)
        #: literals by first character: the candidates for a beginning at a stream's end
        self._by_first: dict[str, list[str]] = {}
        for v in self.literals:
            self._by_first.setdefault(v[0], []).append(v)
        #: the longest beginning of a literal a stream may have to hold
        self.literal_hold = max((len(v) for v in self.literals), default=1) - 1

    @classmethod
    def from_settings(
        cls, settings: Settings, environ: Mapping[str, str] | None = None
    ) -> Redactor:
        return cls(configured_values(settings, environ))

    def _replace(self, m: re.Match[str]) -> str:
        # lastgroup is the outermost group that matched: the literal or the pattern
        keep = self._keep.get(m.lastgroup or "")
        return ((m.group(keep) or "") if keep else "") + self.marker

    def redact_text(self, text: str) -> str:
        return self._any.sub(self._replace, text) if text else text

    def redact_json(self, value: Any) -> Any:
        """``value`` with every string in it redacted (dict keys kept as they are)."""
        if isinstance(value, str):
            return self.redact_text(value)
        if isinstance(value, Mapping):
            return {k: self.redact_json(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.redact_json(v) for v in value]
        return value

    def stream(self, send: Callable[[str], None]) -> DeltaRedactor:
        return DeltaRedactor(self, send)

    # -- streams -------------------------------------------------------------------

    def _held_from(self, text: str, start: int, matches: list[re.Match[str]]) -> int:
        """Where ``text`` (from ``start`` on) must be held back: the earliest place a
        secret may begin whose end has not arrived yet."""
        n = len(text)
        cut = n
        if matches and matches[-1].end() == n:
            cut = matches[-1].start()  # a match at the end may go on
        found = self._partial.search(text, max(start, n - PATTERN_HOLD))
        if found is not None:
            cut = min(cut, found.start())
        for i in range(max(start, n - self.literal_hold), cut):
            tail = text[i:]
            if any(v.startswith(tail) for v in self._by_first.get(text[i], ())):
                cut = i
                break
        # never inside a match (a beginning found within one): hold all of it
        for m in matches:
            if m.start() < cut < m.end():
                return m.start()
        return cut

    def _render(self, text: str, start: int, end: int, matches: list[re.Match[str]]) -> str:
        out, at = [], start
        for m in matches:
            if m.end() > end:
                break
            out += [text[at : m.start()], self._replace(m)]
            at = m.end()
        out.append(text[at:end])
        return "".join(out)


class DeltaRedactor:
    """Redacts a stream of text deltas for ``send``: a secret split across deltas at
    any offset never goes out in the clear. Each ``add`` sends what can no longer
    become part of a secret and holds the rest: a beginning of a literal value, of a
    pattern (up to ``PATTERN_HOLD`` characters), or a match that more text could
    extend (held until a character ends it). ``flush`` sends the redacted rest."""

    #: characters already sent that a pattern's look-behind may look at
    CONTEXT = 16

    def __init__(self, redactor: Redactor, send: Callable[[str], None]) -> None:
        self.redactor = redactor
        self.send = send
        self._before = ""
        self._pending = ""

    def add(self, text: str) -> None:
        if not text:
            return
        self._pending += text
        r, start = self.redactor, len(self._before)
        joined = self._before + self._pending
        matches = list(r._any.finditer(joined, start))
        cut = r._held_from(joined, start, matches)
        if cut > start:
            self._emit(r._render(joined, start, cut, matches), joined[:cut])
            self._pending = joined[cut:]

    def flush(self) -> None:
        if self._pending:
            r, start = self.redactor, len(self._before)
            joined = self._before + self._pending
            matches = list(r._any.finditer(joined, start))
            self._emit(r._render(joined, start, len(joined), matches), joined)
            self._pending = ""

    def _emit(self, out: str, sent: str) -> None:
        self._before = sent[-self.CONTEXT :]
        if out:
            self.send(out)


# -- the process's redactor and its log records ----------------------------------------

_lock = threading.Lock()
_current: Redactor | None = None
_base_factory: Callable[..., logging.LogRecord] | None = None
_FORMATTER = logging.Formatter()


def current() -> Redactor:
    """The process's redactor: the one ``install`` set, else one from the settings."""
    global _current
    found = _current
    if found is not None:
        return found
    with _lock:
        if _current is None:
            _current = Redactor.from_settings(get_settings())
        return _current


class RedactingFilter(logging.Filter):
    """Redacts a record's message, arguments, traceback and stack in place (and never
    drops one)."""

    def __init__(self, redactor: Redactor | None = None) -> None:
        super().__init__()
        self.redactor = redactor

    def filter(self, record: logging.LogRecord) -> bool:
        r = self.redactor or current()
        if isinstance(record.msg, str):
            record.msg = r.redact_text(record.msg)
        if isinstance(record.args, tuple):
            record.args = tuple(_arg(r, a) for a in record.args)
        elif isinstance(record.args, Mapping):
            record.args = {k: _arg(r, v) for k, v in record.args.items()}
        try:
            message = record.getMessage()
        except Exception:  # a malformed record: logging reports it when it is emitted
            return True
        clean = r.redact_text(message)
        if clean != message:  # a secret split between the format and an argument
            record.msg, record.args = clean, ()
        if record.exc_info and not record.exc_text:
            text = _FORMATTER.formatException(record.exc_info)
            clean = r.redact_text(text)
            if clean != text:
                record.exc_text = clean
        if record.stack_info:
            record.stack_info = r.redact_text(record.stack_info)
        return True


def _arg(r: Redactor, value: Any) -> Any:
    if isinstance(value, str):
        return r.redact_text(value)
    if value is None or isinstance(value, int | float):
        return value
    text = str(value)
    clean = r.redact_text(text)
    return value if clean == text else clean


def install(redactor: Redactor) -> None:
    """Make ``redactor`` the process's, and redact every log record from now on.

    The filter runs as the log record factory, not on handlers: Celery and uvicorn
    configure their own handlers after this runs, and a factory sees every record
    whatever the handlers are."""
    global _current, _base_factory
    with _lock:
        _current = redactor
        if _base_factory is not None:
            return  # installed already: the filter reads the new current()
        base = _base_factory = logging.getLogRecordFactory()
    flt = RedactingFilter()

    def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = base(*args, **kwargs)
        flt.filter(record)
        return record

    logging.setLogRecordFactory(factory)
