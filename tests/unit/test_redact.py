"""Redaction (runtime/obs/redact.py): literals and patterns, the streaming redactor at
every split offset, JSON walking, log records and problem bodies; and the executor
against the fakes: a secret a tool returns or a model streams is never stored or
published."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest

import turnkeep.worker.steps.model
from tests.unit.fakes import FakeResources
from turnkeep.api.errors import RequestInvalid
from turnkeep.api.problems import ProblemAnswer
from turnkeep.runtime.agents.definition import AgentDefinition
from turnkeep.runtime.agents.registry import AgentRegistry
from turnkeep.runtime.agents.tools import Effect, ToolContext, tool
from turnkeep.runtime.messages import ModelRequest, ModelResponse, Role, ToolCall
from turnkeep.runtime.obs import redact
from turnkeep.runtime.obs.redact import MARKER, RedactingFilter, Redactor
from turnkeep.runtime.providers.demo_model import demo_script
from turnkeep.runtime.settings import Settings
from turnkeep.runtime.states import TurnState
from turnkeep.worker.lane import run_session

LITERAL = "hunter2-very-secret-value"
#: a pattern's example, the text it stands in, what redaction leaves of it
EXAMPLES = {
    "sk_key": "sk-proj-" + "Ab3_" * 8,
    "sk_ant_key": "sk-ant-api03-" + "x9Y-" * 8,
    "aws": "AKIA" + "QW3ERTY7UIOP2ASD",
    "github": "ghp_" + "a1B2" * 9,
    "github_pat": "github_pat_" + "11AB" * 6,
    "slack": "xoxb-1234567890-abcdefghij",
    "pem": "-----BEGIN RSA PRIVATE KEY-----\nMIIEow\nIBAAK+/=\n-----END RSA PRIVATE KEY-----",
}
BEARER = "Bearer eyJhbGciOi.J9x_y-z~12345"


@pytest.fixture
def r() -> Redactor:
    return Redactor([LITERAL, "another-configured-one"])


# -- literals and patterns -----------------------------------------------------------


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_each_pattern_is_redacted(r: Redactor, name: str) -> None:
    secret = EXAMPLES[name]
    assert r.redact_text(f"here: {secret}, done") == f"here: {MARKER}, done"


def test_bearer_keeps_the_scheme_and_redacts_the_token(r: Redactor) -> None:
    assert r.redact_text(f"Authorization: {BEARER}\n") == f"Authorization: Bearer {MARKER}\n"
    assert r.redact_text("bearer abcdefghijklmnop1234") == f"bearer {MARKER}"


def test_an_unterminated_private_key_is_redacted_to_the_end(r: Redactor) -> None:
    assert r.redact_text("x -----BEGIN PRIVATE KEY-----\nMIIE...") == f"x {MARKER}"


@pytest.mark.parametrize(
    "text",
    [
        "the task-abcdefghijklmnopqrstuvwxyz0123 ran",  # sk- inside a word
        "sk-short",
        "AKIAQW3ERTY7UIOP2ASDX",  # 21 characters: no access key id
        "the bearer instrument",
        "ghp_tooshort",
        "[REDACTED]",
        "plain text, nothing secret -----BEGIN CERTIFICATE-----",
    ],
)
def test_text_without_a_secret_is_left_alone(r: Redactor, text: str) -> None:
    assert r.redact_text(text) == text


def test_literals_are_replaced_anywhere_longest_first() -> None:
    r = Redactor(["abcdefgh", "abcdefgh-and-more"])
    assert r.redact_text("xabcdefgh-and-morey abcdefghz") == f"x{MARKER}y {MARKER}z"


def test_short_and_empty_values_are_ignored() -> None:
    r = Redactor(["", "  ", "abc", "REDACTED", "long-enough"])
    assert r.literals == ["long-enough"]
    assert r.redact_text("abc REDACTED long-enough") == f"abc REDACTED {MARKER}"


def test_values_from_the_settings_the_environment_and_the_urls() -> None:
    settings = Settings(
        obs={"redact_values": '["json-listed-1", "json-listed-2"]'},
        webhooks={"secret": "whsec-signing"},
        database={"url": "postgresql+psycopg://app:pg-password-9@db:5432/turnkeep"},
    )
    env = {"TURNKEEP_OPENAI_API_KEY": "provider-key-1", "ACME_API_KEY": "acme-key-22", "X": "y"}
    literals = Redactor.from_settings(settings, env).literals
    for value in ("json-listed-1", "json-listed-2", "whsec-signing", "pg-password-9"):
        assert value in literals
    assert "provider-key-1" in literals and "acme-key-22" in literals and "y" not in literals
    listed = Settings(obs={"redact_values": " comma-one, comma-two ,"})
    assert {"comma-one", "comma-two"} <= set(Redactor.from_settings(listed, {}).literals)


def test_redact_json_walks_dicts_and_lists_and_keeps_keys(r: Redactor) -> None:
    value = {
        LITERAL: [f"a {LITERAL}", {"n": 1, "ok": True, "none": None}],
        "nested": {"deep": [[EXAMPLES["sk_key"]]], "t": (LITERAL, 2.5)},
    }
    assert r.redact_json(value) == {
        LITERAL: [f"a {MARKER}", {"n": 1, "ok": True, "none": None}],
        "nested": {"deep": [[MARKER]], "t": [MARKER, 2.5]},
    }
    assert r.redact_json("plain") == "plain" and r.redact_json(7) == 7


# -- streams -------------------------------------------------------------------------


def _stream(r: Redactor, parts: list[str]) -> str:
    out: list[str] = []
    s = r.stream(out.append)
    for p in parts:
        s.add(p)
    s.flush()
    assert "" not in out
    return "".join(out)


CASES = [LITERAL, "another-configured-one", BEARER, *EXAMPLES.values()]


@pytest.mark.parametrize("secret", CASES)
def test_a_secret_split_at_any_offset_across_two_and_three_deltas_never_goes_out(
    r: Redactor, secret: str
) -> None:
    # near misses around it: a beginning of the literal, of a key, a lone "s", and a
    # key's shape inside a word (its look-behind sees what was sent before)
    text = f"is hunter2-very, sk- or s? {secret} ok. task-{'a' * 22} s"
    expected = r.redact_text(text)
    assert secret not in expected and expected.startswith("is hunter2-very, sk- or s? ")
    assert expected.endswith(f" ok. task-{'a' * 22} s")
    n = len(text)
    for i in range(n + 1):
        out = _stream(r, [text[:i], text[i:]])
        assert out == expected, (i, out)
    for i in range(n + 1):
        for j in range(i, n + 1, 1 if len(secret) < 40 else 3):
            out = _stream(r, [text[:i], text[i:j], text[j:]])
            assert out == expected, (i, j, out)


def test_a_stream_one_character_at_a_time(r: Redactor) -> None:
    text = " ".join([LITERAL, *EXAMPLES.values(), BEARER, "end"])
    out = _stream(r, list(text))
    assert out == r.redact_text(text)
    assert all(s not in out for s in CASES)


def test_a_stream_holds_back_only_what_may_begin_a_secret(r: Redactor) -> None:
    out: list[str] = []
    s = r.stream(out.append)
    s.add("hello world. ")
    assert out == ["hello world. "]
    s.add("the key is sk-")
    assert out[-1] == "the key is "  # "sk-" may begin a key
    s.add("abc; and hunter2-ver")
    assert "".join(out).endswith("sk-abc; and ")  # no key: out it goes; the literal waits
    s.add("y-secret-value!")
    s.flush()
    assert "".join(out) == f"hello world. the key is sk-abc; and {MARKER}!"


def test_a_key_that_runs_on_is_held_until_a_character_ends_it(r: Redactor) -> None:
    out: list[str] = []
    s = r.stream(out.append)
    key = EXAMPLES["sk_key"]
    s.add("a " + key)
    s.add("MORE" * 100)  # still the key
    assert "".join(out) == "a "
    s.add(" after")
    s.flush()
    assert "".join(out) == f"a {MARKER} after"


# -- log records and problems ----------------------------------------------------------


def _capture(name: str, flt: logging.Filter | None = None) -> tuple[logging.Logger, io.StringIO]:
    buf = io.StringIO()
    handler = logging.StreamHandler(buf)
    if flt is not None:
        handler.addFilter(flt)
    logger = logging.getLogger(name)
    logger.handlers[:] = [handler]
    logger.propagate = False
    logger.setLevel(logging.INFO)
    return logger, buf


def test_the_log_filter_redacts_message_arguments_and_traceback(r: Redactor) -> None:
    logger, buf = _capture("turnkeep.test.redact.filter", RedactingFilter(r))
    logger.info("token %s for %r", LITERAL, {"key": EXAMPLES["sk_key"]})
    logger.info("split hunter2-very-%s", "secret-value")  # neither half alone is one
    logger.info("%(who)s has %(what)s", {"who": "ann", "what": BEARER})
    try:
        raise ValueError(f"bad value {LITERAL}")
    except ValueError:
        logger.exception("failed")
    text = buf.getvalue()
    assert all(s not in text for s in (LITERAL, EXAMPLES["sk_key"], BEARER)), text
    assert f"token {MARKER} for" in text and "split " + MARKER in text
    assert "ValueError: bad value [REDACTED]" in text and "Traceback" in text


@pytest.fixture
def installed() -> Iterator[None]:
    factory, base, current = logging.getLogRecordFactory(), redact._base_factory, redact._current
    redact._base_factory = None
    yield
    logging.setLogRecordFactory(factory)
    redact._base_factory, redact._current = base, current


def test_install_redacts_every_record_whatever_the_handlers(installed: None) -> None:
    redact.install(Redactor(["first-secret-1"]))
    logger, buf = _capture("turnkeep.test.redact.install")  # a handler with no filter
    logger.warning("a %s", "first-secret-1")
    redact.install(Redactor(["second-secret-2"]))  # replaces it, never stacks
    logger.warning("b %s %s", "second-secret-2", 3)
    assert buf.getvalue() == f"a {MARKER}\nb {MARKER} 3\n"
    assert redact.current().literals == ["second-secret-2"]


def test_problem_bodies_are_redacted(monkeypatch: pytest.MonkeyPatch, r: Redactor) -> None:
    monkeypatch.setattr(redact, "_current", r)
    refused = ProblemAnswer.of(RequestInvalid, f"'{LITERAL}' is not an integer")
    body = refused.response().body
    assert LITERAL.encode() not in body
    assert json.loads(body)["detail"] == f"'{MARKER}' is not an integer"


# -- the executor, against the fakes ---------------------------------------------------

#: a configured value with spaces: the demo model streams it word by word
SPOKEN = "open sesame 4c1d 9e7f 2a6b"
KEY = EXAMPLES["sk_ant_key"]
seen_args: list[dict[str, Any]] = []
seen_requests: list[ModelRequest] = []


@tool(
    name="leaky",
    effect=Effect.READ,
    parameters={"type": "object", "properties": {"q": {"type": "string"}}},
)
def leaky(ctx: ToolContext, args: dict[str, Any]) -> Any:
    seen_args.append(dict(args))
    return {"token": KEY, "note": f"the vault says {SPOKEN}"}


@demo_script("unit-redact-leak")
def _leak(request: ModelRequest) -> ModelResponse:
    seen_requests.append(request)
    results = [m for m in request.messages if m.role is Role.TOOL]
    if not results:
        call = ToolCall(id="call_1", name="leaky", arguments={"q": SPOKEN})
        return ModelResponse(text=f"let me check {SPOKEN} with {KEY} now", tool_calls=(call,))
    return ModelResponse(text=f"done: {results[0].content} and {SPOKEN}")


LEAKER = AgentDefinition(
    name="leaker",
    version="1",
    provider="demo",
    model="unit-redact-leak",
    instructions="Leak.",
    tools=(leaky,),
)


def test_nothing_a_turn_stores_or_publishes_holds_a_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TURNKEEP_DEMO_LATENCY", raising=False)
    # every word its own publish: the secret reaches the redactor split across deltas
    monkeypatch.setattr(turnkeep.worker.steps.model, "DELTA_FLUSH_CHARS", 1)
    seen_args.clear()
    seen_requests.clear()
    ctx = FakeResources(agents=AgentRegistry([LEAKER]), redactor=Redactor([SPOKEN]))
    ctx.store.admit("t1", "s1", "u1", LEAKER, "look it up")
    run_session(ctx, "t1", "s1")

    turn = ctx.store.turn("t1", "s1", "u1")
    assert turn.state is TurnState.COMPLETED
    stored = json.dumps(
        {
            "events": [e.data for e in ctx.store.journal("t1", "s1")],
            "turns": [
                [t.result, t.error, t.pending_input and t.pending_input.to_json()]
                for t in ctx.store.all_turns.values()
            ],
            "appends": ctx.store.append_calls,
            "published": [e.data for e in ctx.publisher.events],
            "deltas": ctx.publisher.deltas,
        },
        default=str,
    )
    for secret in (SPOKEN, KEY, "sesame 4c1d", "api03"):
        assert secret not in stored
    assert MARKER in turn.result["text"]
    # the live text: split across many publishes, the secret never whole nor in parts
    first = [text for _, step, text in ctx.publisher.deltas if step == 1]
    assert len(first) > 5
    assert "".join(first) == f"let me check {MARKER} with {MARKER} now "
    # what is stored is what runs on: the tool got, and the model saw, the redacted form
    assert seen_args == [{"q": MARKER}]
    tool_result = next(m for m in seen_requests[-1].messages if m.role is Role.TOOL)
    assert KEY not in tool_result.content and MARKER in tool_result.content
