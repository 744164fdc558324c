"""The ``turnkeep`` command's pure parts: how events, turns and timelines render (plain
when not on a terminal), the hints that say how to answer a wait, the answer and
token helpers, and the process command lines."""

from __future__ import annotations

import io
import json
import sys
from datetime import UTC, datetime
from typing import Any

import pytest
import typer
from rich.console import Console

from turnkeep import render
from turnkeep.api.auth import TokenTable, token_digest
from turnkeep.cli import answer_body, new_token, process, token_entries
from turnkeep.models import Event, Timeline, Turn

AT = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


def event(seq: int, type: str, data: dict[str, Any], step: int | None = None) -> Event:
    return Event(
        seq=seq, session_id="s-1", turn_id="t-1", type=type, step=step, data=data, created_at=AT
    )


def plain(renderable: Any, width: int = 200) -> str:
    out = io.StringIO()
    Console(file=out, width=width, highlight=False).print(renderable)
    return out.getvalue()


APPROVAL = {
    "request_id": "approval-2-1",
    "kind": "approval",
    "step": 2,
    "tool": {"name": "pay", "version": "1"},
    "arguments": {"amount": 9},
    "response_schema": {
        "type": "object",
        "required": ["approved"],
        "properties": {"approved": {"type": "boolean"}, "reason": {"type": "string"}},
    },
}
QUESTION = {
    "request_id": "question-2-1",
    "kind": "question",
    "tool": {"name": "ask_name"},
    "arguments": {"question": "Your name?"},
    "response_schema": {
        "type": "object",
        "required": ["answer"],
        "properties": {"answer": {"type": "string"}},
    },
}


def test_each_event_kind_says_what_happened():
    model = event(
        3,
        "model.completed",
        {
            "model": "demo/weather",
            "message": {
                "role": "assistant",
                "content": "Let me look that up.",
                "tool_calls": [{"id": "c1", "name": "get_weather", "arguments": {"city": "L"}}],
            },
        },
        step=1,
    )
    assert render.event_lines(model) == [
        "step 1  demo/weather: Let me look that up.",
        '→ get_weather {"city": "L"}',
    ]
    tool = event(
        4,
        "tool.completed",
        {"tool": "get_weather", "message": {"role": "tool", "content": '{"celsius": 9}'}},
        step=2,
    )
    assert render.event_lines(tool) == ['step 2  get_weather ← {"celsius": 9}']
    failed_tool = event(
        4, "tool.completed", {"message": {"name": "pay", "content": "boom", "is_error": True}}
    )
    assert render.event_lines(failed_tool) == ["pay ✗ error boom"]
    accepted = event(
        1,
        "turn.accepted",
        {"agent": "demo", "by": "me", "input": {"messages": [{"role": "user", "content": "Hi"}]}},
    )
    assert render.event_lines(accepted) == ["agent demo  by me", "user: Hi"]
    resolved = event(
        5,
        "input.resolved",
        {"request_id": "approval-2-1", "by": "me", "response": {"approved": False}},
    )
    assert render.event_lines(resolved) == ["approval-2-1 denied by me"]
    done = event(6, "turn.completed", {"result": {"text": "9 degrees"}})
    assert render.event_lines(done) == ["result: 9 degrees"]
    structured = event(6, "turn.completed", {"result": {"text": "x", "output": {"a": 1}}})
    assert render.event_lines(structured) == ['result: {"text": "x", "output": {"a": 1}}']
    failed = event(6, "turn.failed", {"error": {"code": "model_failed", "message": "503"}})
    assert render.event_lines(failed) == ["error: model_failed: 503"]
    unknown = event(7, "something.new", {"x": 1})
    assert render.event_lines(unknown) == ['{"x": 1}']


def test_a_wait_says_how_to_answer_it():
    lines = render.event_lines(event(4, "input.requested", APPROVAL, step=2))
    assert lines[0] == 'step 2  approval approval-2-1  tool pay  {"amount": 9}'
    assert lines[1:] == [
        "answer: turnkeep approve s-1 t-1 approval-2-1",
        "answer: turnkeep deny s-1 t-1 approval-2-1 --reason '…'",
    ]
    assert render.answer_hints("s 1", "t-1", QUESTION) == [
        """turnkeep answer 's 1' t-1 question-2-1 --json '{"answer": "…"}'"""
    ]
    assert render.skeleton(
        {
            "required": ["outcome", "n", "ok", "other"],
            "properties": {
                "outcome": {"enum": ["succeeded", "failed"]},
                "n": {"type": "integer"},
                "ok": {"type": "boolean"},
            },
        }
    ) == {"outcome": "succeeded", "n": 0, "ok": True, "other": None}


def test_event_lines_are_one_line_each_and_cut():
    long = event(3, "model.completed", {"message": {"content": "word\n" * 200}}, step=1)
    (line,) = render.event_lines(long)
    assert "\n" not in line and line.endswith("…") and len(line) < render.SHORT + 20
    text = render.event_text(event(6, "turn.completed", {"result": {"text": "ok"}})).plain
    assert text == "  seq   6  turn.completed     result: ok"


def _turn(**over: Any) -> Turn:
    values: dict[str, Any] = {
        "session_id": "s-1",
        "turn_id": "t-1",
        "state": "completed",
        "agent": "demo",
        "attempt": 1,
        "accepted_seq": 1,
        "created_at": AT,
        "updated_at": AT,
        "result": {"text": "9 degrees"},
    }
    return Turn.model_validate({**values, **over})


def test_a_turn_shows_its_result_or_what_it_waits_for():
    assert render.turn_text(_turn()).plain == (
        "turn t-1  completed  session s-1  agent demo  attempt 1  seq 1\n  result: 9 degrees"
    )
    waiting = _turn(state="waiting", result=None, pending_input=QUESTION)
    lines = render.turn_text(waiting).plain.splitlines()
    assert (
        lines[1] == '  waiting for question question-2-1  tool ask_name  {"question": "Your name?"}'
    )
    assert lines[2].startswith("    answer: turnkeep answer s-1 t-1 question-2-1 --json")
    answered = _turn(state="waiting", result=None, pending_input={**QUESTION, "resolved": True})
    assert render.turn_text(answered).plain.splitlines()[1:] == [
        "  answered question question-2-1: the turn resumes"
    ]


def test_a_definition_change_and_a_held_turn_say_which_versions():
    old, new = "a1" * 32, "b2" * 32
    moved = event(
        7,
        "turn.definition_changed",
        {
            "from_hash": old,
            "to_hash": new,
            "from_version": "1",
            "to_version": "2",
            "reason": "newer_version",
        },
        step=3,
    )
    assert render.event_lines(moved) == [f"step 3  1 → 2  newer_version  ({old[:12]} → {new[:12]})"]
    # a version the API no longer declares is null: its hash stands in for it
    back = event(
        8,
        "turn.definition_changed",
        {**moved.data, "from_version": None, "to_version": "1", "reason": "not_served"},
    )
    assert render.event_lines(back) == [f"{old[:12]} → 1  not_served  ({old[:12]} → {new[:12]})"]
    held = _turn(
        state="queued",
        result=None,
        agent_version="1",
        held={"reason": "definition_unavailable", "definition_hash": old},
    )
    assert render.turn_text(held).plain.splitlines() == [
        "turn t-1  queued  session s-1  agent demo@1  attempt 1  seq 1",
        f"  held: definition_unavailable, no live worker serves {old[:12]}",
    ]
    line = plain(render.turns_table([held], boxed=False)).splitlines()[1]
    assert line.split()[:3] == ["t-1", "queued", "demo@1"]
    assert line.rstrip().endswith("held: definition_unavailable, no live worker serves a1a1a1a…")
    # a turn of an older server, or of a version the API does not declare: the name alone
    assert "agent demo  attempt" in render.turn_text(_turn()).plain


def _timeline() -> Timeline:
    step = {"attempt": 1, "fence": 7, "committed_at": AT, "retries": 0, "outcome": "ok"}
    return Timeline.model_validate(
        {
            "turn": _turn().model_dump(mode="json"),
            "attempts": [{"attempt": 1, "fence": 7, "seq": 2, "started_at": AT}],
            "steps": [
                {
                    **step,
                    "step": 1,
                    "kind": "model",
                    "name": "demo/weather",
                    "seq": 3,
                    "duration_ms": 6,
                    "usage": {"input_tokens": 26, "output_tokens": 6},
                    "cost": None,
                },
                {
                    **step,
                    "step": 2,
                    "kind": "tool",
                    "name": "get_weather",
                    "seq": 4,
                    "duration_ms": 1500,
                    "retries": 2,
                    "outcome": "error",
                    "usage": None,
                    "cost": None,
                },
            ],
            "waits": [
                {
                    "request_id": "approval-2-1",
                    "kind": "approval",
                    "step": 2,
                    "tool": "pay",
                    "requested_seq": 4,
                    "requested_at": AT,
                    "resolved_at": None,
                    "waited_ms": None,
                    "outcome": None,
                    "answered_by": None,
                },
            ],
            "elapsed_ms": 61_000,
        }
    )


def test_a_timeline_is_plain_columns_off_a_terminal():
    out = plain(render.timeline(_timeline(), boxed=False))
    assert "\x1b" not in out and "│" not in out and "╭" not in out
    rows = [line.split() for line in out.splitlines()]
    assert rows[0][:3] == ["turn", "t-1", "completed"]
    assert ["elapsed", "1", "m", "01", "s"] in rows
    assert [
        "1",
        "model",
        "demo/weather",
        "1",
        "7",
        "6",
        "ms",
        "0",
        "ok",
        "26",
        "in",
        "/",
        "6",
        "out",
    ] in rows
    assert ["2", "tool", "get_weather", "1", "7", "1.5", "s", "2", "error"] in rows
    assert ["1", "7", "2", "2026-01-02", "03:04:05"] in rows
    assert ["approval-2-1", "approval", "2", "pay", "4", "open"] in rows
    boxed = plain(render.timeline(_timeline(), boxed=True))
    assert "╭" in boxed and "\x1b" not in boxed  # a console without colours: no escapes


def test_the_console_is_plain_and_unwrapped_off_a_terminal(monkeypatch):
    for name in ("FORCE_COLOR", "TTY_COMPATIBLE", "COLUMNS"):
        monkeypatch.delenv(name, raising=False)
    out = io.StringIO()
    console = render.console(out)
    assert not console.is_terminal and console.width == render.PLAIN_WIDTH
    console.print(
        render.event_text(event(3, "model.completed", {"message": {"content": "x" * 150}}))
    )
    assert "\x1b" not in out.getvalue() and len(out.getvalue().splitlines()) == 1


def test_small_values():
    assert [render.duration(v) for v in (None, 35, 1234, 185_000, 7_440_000)] == [
        "",
        "35 ms",
        "1.2 s",
        "3 m 05 s",
        "2 h 04 m",
    ]
    assert render.usage({"input_tokens": 3, "output_tokens": 4}) == "3 in / 4 out"
    assert render.usage({"cache_read": 2}) == "cache_read=2" and render.usage(None) == ""
    assert render.short("a  b\nc", 10) == "a b c" and render.short("x" * 20, 10) == "x" * 9 + "…"


def test_an_answer_is_json_and_fields_over_it():
    assert answer_body('{"answer": "Ann"}', []) == {"answer": "Ann"}
    assert answer_body('{"a": 1}', ["b=2", "c:=2", "d:=true", "e=x=y"]) == {
        "a": 1,
        "b": "2",
        "c": 2,
        "d": True,
        "e": "x=y",
    }
    for body, fields in (
        (None, []),
        ("[1]", []),
        ("{", []),
        (None, ["novalue"]),
        (None, ["x:=nope"]),
    ):
        with pytest.raises(typer.BadParameter):
            answer_body(body, fields)


def test_a_new_token_is_an_entry_the_api_accepts():
    token, entry = new_token("acme", "ops@acme.io", "admin")
    assert token.startswith("tk_") and len(token) > 40
    assert entry == {
        "sha256": token_digest(token),
        "tenant": "acme",
        "subject": "ops@acme.io",
        "role": "admin",
    }
    principal = TokenTable.parse(json.dumps([entry])).lookup(token)
    assert principal is not None and (principal.tenant, principal.role) == ("acme", "admin")
    assert new_token("acme", "x", "member")[0] != new_token("acme", "x", "member")[0]
    for tenant, subject in (("a:b", "x"), ("acme", "with space"), ("", "x"), ("acme", "a:b")):
        with pytest.raises(ValueError):
            new_token(tenant, subject, "member")


def test_token_entries_are_checked_as_the_api_checks_them():
    raw = json.dumps([{"sha256": "A" * 64, "tenant": "t", "subject": "s"}])
    assert token_entries(raw) == [
        {"tenant": "t", "subject": "s", "role": "member", "sha256": "a" * 64}
    ]
    assert token_entries("") == []
    with pytest.raises(ValueError):
        token_entries('[{"sha256": "xyz", "tenant": "t", "subject": "s"}]')
    table = plain(render.tokens_table(token_entries(raw), boxed=False))
    assert "a" * 12 + "…" in table and "a" * 13 not in table


def test_a_process_command_is_the_real_command_with_its_arguments():
    argv, env = process("worker", ["-l", "INFO", "-c", "2"], {"X": "1"})
    assert argv == [
        sys.executable,
        "-m",
        "celery",
        "-A",
        "turnkeep.worker.app",
        "worker",
        "-l",
        "INFO",
        "-c",
        "2",
    ]
    assert env == {"X": "1"}
    argv, _ = process("api", ["--port", "8001", "--help"], {})
    assert argv[-3:] == ["--port", "8001", "--help"] and "uvicorn" in argv
