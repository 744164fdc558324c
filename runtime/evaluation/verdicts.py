"""What each assertion says of a turn: pure functions of the assertion (turnkeep/
assertions.py) and the turn's trajectory (trajectory.py). Also what is checked of an
assertion before it is stored (``problems``: its JSON Schemas are schemas) and how a
``never_appears`` secret is sealed (``seal``: a salted SHA-256 and its length, the
secret itself dropped).

A judge's score never enters here: ``passed`` is the assertions' alone
(docs/evaluation.md, "Judges that supplement").
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator, Sequence
from typing import Any

import jsonschema

from turnkeep.assertions import (
    MAX_MATCHED,
    Assertion,
    AtMost,
    NeverAppears,
    NeverCalled,
    Outcome,
    OutputContains,
    OutputEquals,
    OutputMatches,
    OutputValid,
    ToolCalled,
    ToolNotCalled,
    ToolOrder,
    category,
)
from turnkeep.evaluation import AssertionResult
from turnkeep.runtime.evaluation.trajectory import Trajectory
from turnkeep.runtime.validation import validate

__all__ = ["evaluate", "evaluate_all", "problems", "seal", "sealed_hash"]


def sealed_hash(salt: str, text: str) -> str:
    return hashlib.sha256(bytes.fromhex(salt) + text.encode("utf-8")).hexdigest()


def seal(assertion: Assertion, salt: str) -> Assertion:
    """A ``never_appears`` with its secret replaced by ``salt`` (32 hex digits), the
    salted hash and the length; any other assertion as it is."""
    if not isinstance(assertion, NeverAppears) or assertion.secret is None:
        return assertion
    secret = assertion.secret
    return NeverAppears(salt=salt, digest=sealed_hash(salt, secret), length=len(secret))


def _schemas(assertion: Assertion) -> Iterator[tuple[str, dict[str, Any]]]:
    if isinstance(assertion, ToolCalled) and assertion.arguments is not None:
        yield "arguments", assertion.arguments
    if isinstance(assertion, OutputValid) and assertion.output_schema is not None:
        yield "output_schema", assertion.output_schema


def problems(assertion: Assertion) -> list[tuple[str, str]]:
    """(field, what is wrong) for each JSON Schema of the assertion that is none."""
    found = []
    for name, schema in _schemas(assertion):
        try:
            jsonschema.validators.validator_for(schema).check_schema(schema)
        except jsonschema.SchemaError as exc:
            found.append((name, f"not a JSON Schema: {exc.message}"))
    return found


def _matches(arguments: Any, schema: dict[str, Any]) -> bool:
    try:
        validate(arguments, schema)
    except jsonschema.ValidationError:
        return False
    return True


def _appears(a: NeverAppears, texts: Sequence[str]) -> bool:
    assert a.salt is not None and a.digest is not None and a.length is not None
    salt, digest, n = bytes.fromhex(a.salt), a.digest, a.length
    for text in texts:
        if len(text) < n:
            continue
        for i in range(len(text) - n + 1):
            if hashlib.sha256(salt + text[i : i + n].encode("utf-8")).hexdigest() == digest:
                return True
    return False


def _output(t: Trajectory) -> tuple[bool, Any]:
    """(there is one, the output): the parsed output of a turn with a schema, else its
    text parsed as JSON when it is JSON."""
    if t.has_output:
        return True, t.output
    if t.text is None:
        return False, None
    try:
        return True, json.loads(t.text)
    except ValueError:
        return False, None


def _ordered(names: Sequence[str], wanted: Sequence[str]) -> bool:
    it = iter(names)
    return all(any(n == w for n in it) for w in wanted)


def evaluate(a: Assertion, t: Trajectory) -> tuple[bool, str]:
    """(passed, why) for one assertion against one turn."""
    called = [c.name for c in t.calls]
    if isinstance(a, ToolCalled):
        hits = [
            c for c in t.calls if c.name == a.tool
            and (a.arguments is None or _matches(dict(c.arguments), a.arguments))
        ]  # fmt: skip
        return len(
            hits
        ) >= a.times, f"{a.tool} called {len(hits)} time(s) as asked, {a.times} wanted"
    if isinstance(a, ToolNotCalled):
        n = called.count(a.tool)
        return n == 0, f"{a.tool} called {n} time(s)"
    if isinstance(a, ToolOrder):
        ok = _ordered(called, a.tools)
        return ok, f"calls: {' > '.join(called) or 'none'}"
    if isinstance(a, AtMost):
        value = t.measure(a.of)
        return value <= a.max, f"{a.of} {value:g} (at most {a.max:g})"
    if isinstance(a, Outcome):
        ok = t.state == a.state and (a.code is None or t.error_code == a.code)
        return ok, f"ended {t.state}" + (f" ({t.error_code})" if t.error_code else "")
    if isinstance(a, NeverCalled):
        ran = sum(1 for c in t.calls if c.name == a.tool and c.ran)
        return ran == 0, f"{a.tool} ran {ran} time(s)"
    if isinstance(a, NeverAppears):
        # the detail never says where: that would show the secret's neighbourhood
        found = _appears(a, t.texts)
        return (
            not found,
            "the secret appears in the turn" if found else "the secret appears nowhere",
        )
    return _output_verdict(a, t)


def _output_verdict(
    a: OutputValid | OutputContains | OutputMatches | OutputEquals, t: Trajectory
) -> tuple[bool, str]:
    if t.state != "completed":
        return False, f"no output: the turn ended {t.state}"
    text = t.text or ""
    if isinstance(a, OutputContains):
        hay, needle = (text.lower(), a.text.lower()) if a.ignore_case else (text, a.text)
        return needle in hay, "found" if needle in hay else "not found in the answer"
    if isinstance(a, OutputMatches):
        found = re.search(a.pattern, text[:MAX_MATCHED]) is not None
        return found, "matches" if found else "no match in the answer"
    present, output = _output(t)
    if isinstance(a, OutputEquals):
        value = output if t.has_output else text
        return value == a.value, "equal" if value == a.value else "differs"
    schema = a.output_schema if a.output_schema is not None else t.output_schema
    if not present:
        return False, "the answer is not JSON"
    if schema is None:
        return True, "the answer is JSON"
    try:
        validate(output, dict(schema))
    except jsonschema.ValidationError as exc:
        return False, f"does not validate: {exc.message}"[:500]
    return True, "validates"


def evaluate_all(assertions: Sequence[Assertion], t: Trajectory) -> list[AssertionResult]:
    out = []
    for i, a in enumerate(assertions):
        passed, detail = evaluate(a, t)
        out.append(
            AssertionResult(
                index=i, kind=a.kind, category=category(a), passed=passed, detail=detail[:500]
            )
        )
    return out
