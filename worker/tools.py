"""Runs one tool call: checks its arguments against the tool's schema, calls it on a
thread of its own under the tool's timeout, and turns any failure into an error
result the model can read (never a crash).

A call that overruns its timeout is abandoned: Python cannot stop a thread, so it
runs on, but its result, should it ever come, is dropped; the executor records the
call as timed out and the tool's effect class decides what follows.

A result (or error) longer than ``max_chars`` (``TURNKEEP_MAX_TOOL_RESULT_CHARS``) is
cut to its first ``max_chars`` characters and a marker the model sees,
``…[truncated: N more characters]``; the journal keeps what the model saw.

The context's ``step`` (docs/tool-steps.md) records its results in Postgres
(worker/tool_steps.py), through the store given as ``steps`` or, by default, the worker
process's own (worker/resources.py), looked up only when a tool takes a step.
"""

from __future__ import annotations

import contextvars
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jsonschema

from turnkeep.runtime.agents.definition import AgentDefinition
from turnkeep.runtime.agents.tools import ToolContext, ToolDefinition
from turnkeep.runtime.decisions import content_of
from turnkeep.runtime.inputs import ExternalAuthRequired
from turnkeep.runtime.messages import Message, ToolCall
from turnkeep.runtime.obs.faults import FaultPoint, hit
from turnkeep.runtime.plan import idempotency_key, tool_message
from turnkeep.runtime.timers import SleepRequested
from turnkeep.runtime.validation import validate
from turnkeep.worker.followup_schedules import StoreFollowUps
from turnkeep.worker.resources import resources
from turnkeep.worker.tool_steps import StoreStepLog, ToolStepStore

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Ran:
    """The call returned or failed: its result message and what the journal keeps."""

    message: Message
    meta: dict[str, Any]


@dataclass(frozen=True)
class TimedOut:
    """The call overran its timeout and was abandoned."""

    seconds: float


@dataclass(frozen=True)
class NeedsAuth:
    """The tool asked for credentials it does not hold."""

    request: ExternalAuthRequired


@dataclass(frozen=True)
class Sleeps:
    """The tool asked to be woken later (``ToolContext.sleep_until``)."""

    request: SleepRequested


ToolOutcome = Ran | TimedOut | NeedsAuth | Sleeps

#: the longest result the model sees by default (the setting's default)
MAX_RESULT_CHARS = 65_536


def truncate(text: str, max_chars: int) -> str:
    """``text``, or its first ``max_chars`` characters and a marker saying how many more
    there were."""
    if len(text) <= max_chars:
        return text
    return f"{text[:max_chars]}…[truncated: {len(text) - max_chars} more characters]"


def meta_of(tool: ToolDefinition) -> dict[str, Any]:
    return {"tool": tool.name, "version": tool.version, "effect": tool.effect.value}


def _process_store() -> ToolStepStore:
    """The worker process's store (worker/resources.py), the one the executor steps with:
    looked up on a tool's first step, so a tool that takes none (or a test that passes
    ``steps``) builds none of the process's resources."""
    return resources().store.tool_steps


def _step_store(steps: ToolStepStore | None) -> Callable[[], ToolStepStore]:
    if steps is None:
        return _process_store
    return lambda: steps


def _call(
    tool: ToolDefinition, ctx: ToolContext, args: dict[str, Any]
) -> tuple[bool, Any, BaseException | None]:
    """``tool.fn(ctx, args)`` on its own daemon thread: (finished, value, error)."""
    box: dict[str, Any] = {}
    done = threading.Event()

    def target() -> None:
        try:
            box["value"] = tool.fn(ctx, args)
        except BaseException as exc:  # handed back to the caller's thread
            box["error"] = exc
        finally:
            done.set()

    # the caller's context goes with the call: its log ids (tenant … step, fence) and the
    # current trace span, so what the tool logs or traces is the step's
    context = contextvars.copy_context()
    threading.Thread(
        target=context.run, args=(target,), name=f"tool-{tool.name}", daemon=True
    ).start()
    if not done.wait(max(0.0, ctx.deadline - time.monotonic())):
        return False, None, None
    return True, box.get("value"), box.get("error")


def run_tool(
    agent: AgentDefinition,
    call: ToolCall,
    *,
    tenant_id: str,
    session_id: str,
    turn_id: str,
    step: int,
    cancelled: Callable[[], bool],
    auth: dict[str, Any] | None = None,
    max_chars: int = MAX_RESULT_CHARS,
    steps: ToolStepStore | None = None,
    woken: bool = False,
    submitted_by: str = "",
) -> ToolOutcome:
    """Run the call once, under the tool's timeout; its result at most ``max_chars``
    characters (``truncate``). ``steps``: where ``ctx.step`` records results (None:
    the worker process's store, ``_process_store``)."""
    tool = agent.tool(call.name)
    if tool is None:
        msg = tool_message(call, f"error: no tool named {call.name!r}", is_error=True)
        return Ran(msg, {"tool": call.name, "version": None, "error": "unknown_tool"})
    meta = meta_of(tool)
    try:
        validate(call.arguments, tool.parameters)
    except jsonschema.ValidationError as exc:
        msg = tool_message(call, f"error: invalid arguments: {exc.message}", is_error=True)
        return Ran(msg, {**meta, "error": "tool_arguments_invalid"})
    ctx = ToolContext(
        tenant_id=tenant_id,
        session_id=session_id,
        turn_id=turn_id,
        step_number=step,
        idempotency_key=idempotency_key(tenant_id, session_id, turn_id, step),
        deadline=time.monotonic() + tool.timeout,
        cancelled=cancelled,
        auth=auth,
        woken=woken,
        _steps=StoreStepLog(
            _step_store(steps),
            tenant_id=tenant_id,
            session_id=session_id,
            turn_id=turn_id,
            step=step,
        ),
        # ctx.schedule_turn: a follow-up turn of this session (runtime/followups.py)
        _followups=StoreFollowUps(
            lambda: resources().store.schedules,
            lambda: resources().agents,
            tenant_id=tenant_id,
            session_id=session_id,
            turn_id=turn_id,
            step=step,
            agent=agent.name,
            submitted_by=submitted_by,
        ),
    )
    hit(FaultPoint.BEFORE_TOOL_EFFECT)
    finished, value, error = _call(tool, ctx, dict(call.arguments))
    if not finished:
        log.warning("tool %s overran its %ss timeout; abandoned", tool.name, tool.timeout)
        return TimedOut(tool.timeout)
    if isinstance(error, ExternalAuthRequired):
        return NeedsAuth(error)
    if isinstance(error, SleepRequested):
        return Sleeps(error)
    if error is not None:
        if not isinstance(error, Exception):
            raise error  # SystemExit and the like are not the tool's failure
        # the model sees the failure and may try something else; the log keeps the
        # type only: neither the arguments nor the message may carry a secret there
        log.warning("tool %s failed: %s", tool.name, type(error).__name__)
        text = truncate(f"error: {type(error).__name__}: {error}", max_chars)
        return Ran(tool_message(call, text, is_error=True), {**meta, "error": "tool_failed"})
    hit(FaultPoint.AFTER_TOOL_EFFECT)
    return Ran(tool_message(call, truncate(content_of(value), max_chars)), meta)
