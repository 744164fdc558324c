"""A tool result longer than the bound reaches the model cut, with a marker saying how
much was cut (worker/tools.run_tool); a short one is untouched."""

from __future__ import annotations

from typing import Any

from turnkeep.runtime.agents.definition import AgentDefinition
from turnkeep.runtime.agents.tools import ToolContext, tool
from turnkeep.runtime.messages import ToolCall
from turnkeep.worker.tools import MAX_RESULT_CHARS, Ran, run_tool, truncate


@tool(name="echo", parameters={"type": "object", "properties": {"n": {"type": "integer"}}})
def echo(ctx: ToolContext, args: dict[str, Any]) -> str:
    return "x" * args["n"]


@tool(name="shout", parameters={"type": "object", "properties": {"n": {"type": "integer"}}})
def shout(ctx: ToolContext, args: dict[str, Any]) -> str:
    raise ValueError("y" * args["n"])


AGENT = AgentDefinition(
    name="echoer", version="1", provider="demo", model="m", instructions="", tools=(echo, shout)
)


def _run(name: str, n: int, **kw: Any) -> Ran:
    outcome = run_tool(
        AGENT,
        ToolCall(id="call_1", name=name, arguments={"n": n}),
        tenant_id="t",
        session_id="s",
        turn_id="u",
        step=1,
        cancelled=lambda: False,
        **kw,
    )
    assert isinstance(outcome, Ran)
    return outcome


def test_a_result_within_the_bound_is_kept_whole() -> None:
    assert _run("echo", 10, max_chars=10).message.content == "x" * 10
    assert truncate("abc", 3) == "abc"


def test_a_longer_result_is_cut_with_a_marker_the_model_sees() -> None:
    ran = _run("echo", 25, max_chars=10)
    assert ran.message.content == "x" * 10 + "…[truncated: 15 more characters]"
    assert not ran.message.is_error and "error" not in ran.meta


def test_the_default_bound_is_64_kib_of_characters() -> None:
    ran = _run("echo", MAX_RESULT_CHARS + 1)
    assert ran.message.content.startswith("x" * MAX_RESULT_CHARS + "…[truncated: 1 more")
    assert MAX_RESULT_CHARS == 65_536


def test_a_long_error_is_cut_too() -> None:
    ran = _run("shout", 1000, max_chars=50)
    assert ran.message.is_error and ran.meta["error"] == "tool_failed"
    assert len(ran.message.content) < 100
    assert ran.message.content.endswith("more characters]")
