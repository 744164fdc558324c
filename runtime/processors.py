"""Processors: ordered checks an agent's definition pins, over what goes in and out.

A processor looks at one stage of a turn and answers a verdict with a bounded signal;
it never rewrites content. The stages:

``input``    the turn's input messages, once, before its first model call
``request``  each model request (its messages), before it is sent
``output``   each model response (its text and tool calls), before it counts
``error``    a turn about to fail (its typed error)

Each run leaves a receipt on the event the stage produced — the input's and the
request's on the call's ``model.completed``, the output's there too, the error's on
``turn.failed``: ``{"name", "version", "stage", "sha256" (of what it looked at),
"verdict", "signal"}``, never a copy of the content. A ``block`` verdict fails the
turn ``processor_blocked`` (naming the processor) before the model is called, or
before its answer is used; the call's receipts so far, the blocking stage's included,
then go on ``turn.failed``. The list is part of the agent's definition hash.

Built in: ``input_bounds`` (blocks input past a size), ``injection_signals`` (flags,
not blocks, phrases that try to take over instructions), ``moderation`` (asks an
HTTP endpoint; configured and unreachable, it blocks: fails closed) and
``secret_signals`` (counts what the redactor catches; redaction itself runs at every
commit, runtime/obs/redact.py).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import httpx

from turnkeep.runtime.hashing import sha256_hex
from turnkeep.runtime.obs.redact import Redactor, current

Stage = Literal["input", "request", "output", "error"]
Verdict = Literal["pass", "flag", "block"]
#: characters of a receipt's signal
MAX_SIGNAL = 200


@dataclass(frozen=True)
class Seen:
    """What a processor looks at: the stage's content as text, and its hash."""

    stage: Stage
    text: str

    @property
    def sha256(self) -> str:
        return sha256_hex(self.text)


@dataclass(frozen=True)
class ProcessorOutcome:
    verdict: Verdict = "pass"
    signal: str = ""


@dataclass(frozen=True)
class Processor:
    name: str
    version: str
    stages: tuple[Stage, ...]
    check: Callable[[Seen], ProcessorOutcome] = field(compare=False, repr=False)
    #: what the definition hash pins besides name and version (its settings)
    settings: dict[str, Any] = field(default_factory=dict)

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "version": self.version,
            "stages": list(self.stages),
            "settings": self.settings,
        }

    def run(self, seen: Seen) -> dict[str, Any]:
        """The receipt of one run (a processor that raises blocks: fail closed)."""
        try:
            out = self.check(seen)
        except Exception as exc:
            out = ProcessorOutcome("block", f"processor failed: {type(exc).__name__}")
        return {
            "name": self.name,
            "version": self.version,
            "stage": seen.stage,
            "sha256": seen.sha256,
            "verdict": out.verdict,
            "signal": out.signal[:MAX_SIGNAL],
        }


def run(processors: Sequence[Processor], stage: Stage, text: str) -> list[dict[str, Any]]:
    """Every processor of ``stage``, in declared order: their receipts."""
    seen = Seen(stage, text)
    return [p.run(seen) for p in processors if stage in p.stages]


def blocked(receipts: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    """The first receipt that blocks, if any."""
    return next((r for r in receipts if r["verdict"] == "block"), None)


def as_text(value: Any) -> str:
    """A stage's content as the text processors read (JSON for structures)."""
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)


# -- built in ----------------------------------------------------------------------


def input_bounds(max_chars: int = 100_000) -> Processor:
    """Blocks input (and requests) longer than ``max_chars`` characters."""

    def check(seen: Seen) -> ProcessorOutcome:
        n = len(seen.text)
        if n > max_chars:
            return ProcessorOutcome("block", f"{n} characters, over {max_chars}")
        return ProcessorOutcome("pass", f"{n} characters")

    return Processor("input_bounds", "1", ("input", "request"), check, {"max_chars": max_chars})


_INJECTION = {
    "ignore_instructions": (
        r"ignore (all |any )?(the )?(previous|prior|above) (instructions|prompts?)"
    ),
    "new_instructions": r"(your|the) new instructions (are|follow)",
    "system_prompt": r"(reveal|print|show|repeat) (your|the) (system prompt|instructions)",
    "role_override": r"you are (now|no longer) ",
    "tool_coercion": r"(call|run|execute) the \w+ tool (now|immediately) without",
}
_INJECTION_RE = {k: re.compile(v, re.IGNORECASE) for k, v in _INJECTION.items()}


def injection_signals(block: bool = False) -> Processor:
    """Records phrases that try to take over the instructions (flags; blocks only when
    ``block``): the names of the patterns matched, never the text."""

    def check(seen: Seen) -> ProcessorOutcome:
        hits = sorted(k for k, rx in _INJECTION_RE.items() if rx.search(seen.text))
        if not hits:
            return ProcessorOutcome("pass", "")
        return ProcessorOutcome("block" if block else "flag", ",".join(hits))

    return Processor(
        "injection_signals", "1", ("input", "request", "output"), check, {"block": block}
    )


def moderation(
    url: str, *, timeout: float = 5.0, stages: tuple[Stage, ...] = ("output",)
) -> Processor:
    """Asks ``url`` (POST ``{"input": text}``, answer ``{"flagged": bool, "categories":
    [...]}``) about each stage's content; flagged blocks. Unreachable, or an answer it
    cannot read, blocks too: a configured moderation that cannot moderate fails closed."""

    def check(seen: Seen) -> ProcessorOutcome:
        try:
            r = httpx.post(url, json={"input": seen.text}, timeout=timeout)
            r.raise_for_status()
            body = r.json()
            flagged = bool(body["flagged"])
        except (httpx.HTTPError, ValueError, KeyError, TypeError) as exc:
            return ProcessorOutcome("block", f"moderation unreachable: {type(exc).__name__}")
        cats = ",".join(str(c) for c in (body.get("categories") or [])[:10])
        return (
            ProcessorOutcome("block", cats or "flagged")
            if flagged
            else ProcessorOutcome("pass", "")
        )

    return Processor("moderation", "1", stages, check, {"url": url, "stages": list(stages)})


def secret_signals(redactor: Redactor | None = None) -> Processor:
    """How many secrets the redactor finds in a stage's content (the commit redacts
    them whatever this says)."""

    def check(seen: Seen) -> ProcessorOutcome:
        r = redactor or current()
        n = r.redact_text(seen.text).count(r.marker)
        return ProcessorOutcome("flag" if n else "pass", f"{n} secret(s)" if n else "")

    return Processor("secret_signals", "1", ("input", "output", "error"), check)
