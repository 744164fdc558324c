"""Runs one tool call: checks its arguments against the tool's schema, calls it, and
turns any failure into an error result the model can read (never a crash)."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from typing import Any

import jsonschema

from runtime.definitions import AgentDefinition, ToolContext
from runtime.faults import FaultPoint, hit
from runtime.messages import Message, ToolCall
from runtime.plan import idempotency_key, tool_message
from runtime.validation import validate

log = logging.getLogger(__name__)


def _content(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)


def run_tool(
    agent: AgentDefinition,
    call: ToolCall,
    *,
    tenant_id: str,
    session_id: str,
    turn_id: str,
    step: int,
    cancelled: Callable[[], bool],
) -> tuple[Message, dict[str, Any]]:
    """The tool's result message and what the journal records beside it."""
    tool = agent.tool(call.name)
    if tool is None:
        msg = tool_message(call, f"error: no tool named {call.name!r}", is_error=True)
        return msg, {"tool": call.name, "version": None, "error": "unknown_tool"}
    meta: dict[str, Any] = {"tool": tool.name, "version": tool.version, "effect": tool.effect.value}
    try:
        validate(call.arguments, tool.parameters)
    except jsonschema.ValidationError as exc:
        msg = tool_message(call, f"error: invalid arguments: {exc.message}", is_error=True)
        return msg, {**meta, "error": "tool_arguments_invalid"}
    ctx = ToolContext(
        tenant_id=tenant_id,
        session_id=session_id,
        turn_id=turn_id,
        step=step,
        idempotency_key=idempotency_key(tenant_id, session_id, turn_id, step),
        deadline=time.monotonic() + tool.timeout,
        cancelled=cancelled,
    )
    hit(FaultPoint.BEFORE_TOOL_EFFECT)
    try:
        value = tool.fn(ctx, dict(call.arguments))
    except Exception as exc:
        # the model sees the failure and may try something else; the traceback stays
        # in the worker log, without the arguments
        log.warning("tool %s failed: %s", tool.name, type(exc).__name__)
        msg = tool_message(call, f"error: {type(exc).__name__}: {exc}", is_error=True)
        return msg, {**meta, "error": "tool_failed"}
    hit(FaultPoint.AFTER_TOOL_EFFECT)
    return tool_message(call, _content(value)), meta
