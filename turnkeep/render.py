"""How the ``turnkeep`` command shows things: events, turns, timelines and listings.

Pure functions from the client's models (turnkeep/models.py) to rich renderables;
turnkeep/cli/ prints them on the ``Console`` that ``console()`` makes. On a terminal
that means colours and boxed tables; anywhere else (a pipe, a file, a test) plain
text: no escape sequences, tables as space-aligned columns, long lines not wrapped.
Message content is cut to ``SHORT`` characters: a tail is for following, not for
reading whole tool results (``--json`` prints everything).
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import IO, Any

from rich import box
from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text

from turnkeep.models import Event, Project, Session, Timeline, Turn

#: the width of plain output, which no terminal bounds (``COLUMNS`` still wins)
PLAIN_WIDTH = 200
#: characters of message content, arguments and results an event line shows
SHORT = 160
#: hex digits of a definition hash shown (the full hash is in --json)
HASH = 12

_STATE_STYLE = {
    "queued": "cyan",
    "running": "blue",
    "waiting": "yellow",
    "needs_reconciliation": "yellow",
    "completed": "green",
    "failed": "red",
    "cancelled": "magenta",
    "idle": "dim",
}
_EVENT_STYLE = {
    "turn.accepted": "bold",
    "turn.started": "blue",
    "model.completed": "cyan",
    "tool.completed": "magenta",
    "tool.interrupted": "red",
    "input.requested": "bold yellow",
    "input.resolved": "yellow",
    "turn.definition_changed": "bold cyan",
    "turn.completed": "bold green",
    "turn.failed": "bold red",
    "turn.cancelled": "bold magenta",
}


def console(file: IO[str] | None = None) -> Console:
    """A console on ``file`` (stdout): colours on a terminal (or with FORCE_COLOR),
    plain text elsewhere, ``PLAIN_WIDTH`` wide and without wrapping of printed lines."""
    out = Console(file=file or sys.stdout, highlight=False)
    if not out.is_terminal:
        if not os.environ.get("COLUMNS"):
            out.width = PLAIN_WIDTH
        out.soft_wrap = True
    return out


def table(*columns: str, title: str | None = None, boxed: bool = True) -> Table:
    """A table with these column headers: boxed on a terminal, bare columns otherwise."""
    t = Table(
        *columns,
        title=title,
        title_justify="left",
        box=box.ROUNDED if boxed else None,
        show_edge=boxed,
        pad_edge=boxed,
        header_style="bold" if boxed else "",
    )
    return t


# -- small values ----------------------------------------------------------------------


def short(text: str, limit: int = SHORT) -> str:
    """``text`` on one line, cut to ``limit`` characters with an ellipsis."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def compact(value: Any, limit: int = SHORT) -> str:
    """A JSON value on one line, cut to ``limit`` characters."""
    return short(json.dumps(value, ensure_ascii=False, separators=(", ", ": ")), limit)


def duration(ms: int | None) -> str:
    """``35 ms``, ``1.2 s``, ``3 m 05 s``, ``2 h 04 m``; empty for none."""
    if ms is None:
        return ""
    if ms < 1000:
        return f"{ms} ms"
    seconds = ms / 1000
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, sec = divmod(int(seconds), 60)
    if minutes < 60:
        return f"{minutes} m {sec:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} m"


def usage(value: Mapping[str, int] | None) -> str:
    """``26 in / 6 out`` for the usual token counts, else ``key=value`` pairs."""
    if not value:
        return ""
    if set(value) <= {"input_tokens", "output_tokens"}:
        return f"{value.get('input_tokens', 0)} in / {value.get('output_tokens', 0)} out"
    return " ".join(f"{k}={v}" for k, v in value.items())


def when(value: datetime | None) -> str:
    """A timestamp to the second, in UTC as the API gives it."""
    return "" if value is None else value.strftime("%Y-%m-%d %H:%M:%S")


def state(name: str) -> Text:
    return Text(name, style=_STATE_STYLE.get(name, ""))


def result_text(result: Mapping[str, Any] | None) -> str:
    """A turn's result: its text alone when that is all it holds, else its JSON."""
    if not result:
        return ""
    if set(result) == {"text"} and isinstance(result["text"], str):
        return short(result["text"], 10 * SHORT)
    return compact(result, 10 * SHORT)


def error_text(error: Mapping[str, Any] | None) -> str:
    if not error:
        return ""
    code, message = error.get("code"), error.get("message") or error.get("detail")
    if code is not None and message is not None:
        return f"{code}: {short(str(message), 10 * SHORT)}"
    return compact(error, 10 * SHORT)


# -- how to answer an input request ----------------------------------------------------


def skeleton(schema: Mapping[str, Any] | None) -> dict[str, Any]:
    """An example answer with the required properties of ``schema``, for the hint."""
    example: dict[str, Any] = {}
    if not schema:
        return example
    properties = schema.get("properties") or {}
    for name in schema.get("required") or []:
        kind = (properties.get(name) or {}).get("type")
        enum = (properties.get(name) or {}).get("enum")
        if enum:
            example[name] = enum[0]
        elif kind == "boolean":
            example[name] = True
        elif kind in ("integer", "number"):
            example[name] = 0
        elif kind == "string":
            example[name] = "…"
        else:
            example[name] = None
    return example


def answer_hints(session_id: str, turn_id: str, request: Mapping[str, Any]) -> list[str]:
    """The commands that answer an open input request (``PendingInput`` or the data of
    its ``input.requested`` event)."""
    rid = str(request.get("request_id", ""))
    ids = " ".join(shlex.quote(v) for v in (session_id, turn_id, rid))
    if request.get("kind") == "approval":
        return [
            f"turnkeep approve {ids}",
            f"turnkeep deny {ids} --reason '…'",
        ]
    body = json.dumps(skeleton(request.get("response_schema")), ensure_ascii=False)
    return [f"turnkeep answer {ids} --json {shlex.quote(body)}"]


def _request_line(request: Mapping[str, Any]) -> str:
    kind, rid = request.get("kind", "?"), request.get("request_id", "?")
    parts = [f"{kind} {rid}"]
    tool = request.get("tool")
    name = tool.get("name") if isinstance(tool, Mapping) else tool
    if name:
        parts.append(f"tool {name}")
    if request.get("arguments") is not None:
        parts.append(compact(request["arguments"]))
    if request.get("expires_at"):
        parts.append(f"(expires {request['expires_at']})")
    return "  ".join(parts)


def pending_lines(turn: Turn) -> list[str]:
    """What a parked turn waits for, and how to answer it."""
    if turn.pending_input is None:
        return []
    request = turn.pending_input.model_dump(mode="json")
    if request.get("resolved"):
        return [f"answered {request['kind']} {request['request_id']}: the turn resumes"]
    hints = answer_hints(turn.session_id, turn.turn_id, request)
    return [f"waiting for {_request_line(request)}", *(f"  answer: {h}" for h in hints)]


# -- events ----------------------------------------------------------------------------


def _message(data: Mapping[str, Any]) -> Mapping[str, Any]:
    message = data.get("message")
    return message if isinstance(message, Mapping) else {}


def _model_lines(data: Mapping[str, Any]) -> list[str]:
    message = _message(data)
    head = str(data.get("model") or "")
    content = message.get("content")
    if content:
        head = f"{head}: {short(str(content))}" if head else short(str(content))
    lines = [head]
    for call in message.get("tool_calls") or []:
        if isinstance(call, Mapping):
            lines.append(f"→ {call.get('name')} {compact(call.get('arguments', {}))}")
    return lines


def _tool_lines(data: Mapping[str, Any]) -> list[str]:
    message = _message(data)
    name = data.get("tool") or message.get("name") or "tool"
    content = message.get("content", "")
    error = bool(message.get("is_error") or data.get("error"))
    line = f"{name} {'✗ error' if error else '←'} {short(str(content))}"
    if data.get("reason"):
        line += f"  ({data['reason']})"
    return [line]


def _resolved(data: Mapping[str, Any]) -> str:
    response = data.get("response")
    verdict = "answered"
    if isinstance(response, Mapping):
        if response.get("expired"):
            verdict = "expired"
        elif isinstance(response.get("approved"), bool):
            verdict = "approved" if response["approved"] else "denied"
        elif isinstance(response.get("outcome"), str):
            verdict = str(response["outcome"])
    by = f" by {data['by']}" if data.get("by") else ""
    return f"{data.get('request_id', '?')} {verdict}{by}"


def _accepted(data: Mapping[str, Any]) -> list[str]:
    head = f"agent {data.get('agent', '?')}" + (f"  by {data['by']}" if data.get("by") else "")
    messages = (data.get("input") or {}).get("messages") or []
    users = [m for m in messages if isinstance(m, Mapping) and m.get("role") == "user"]
    if users:
        return [head, f"user: {short(str(users[-1].get('content', '')))}"]
    return [head]


def _definition_changed(data: Mapping[str, Any]) -> str:
    """``1 → 2  newer_version  (3f2a9c0d1e2f → 8b1e4c5d6a7b)``: a null version (not
    declared) shows as its hash's first 12 hex."""
    old, new = (str(data.get(k) or "")[:HASH] for k in ("from_hash", "to_hash"))
    before = data.get("from_version") or old or "?"
    after = data.get("to_version") or new or "?"
    return f"{before} → {after}  {data.get('reason', '')}  ({old} → {new})"


def _by_reason(data: Mapping[str, Any]) -> str:
    parts = [f"{k} {data[k]}" for k in ("by", "reason", "by_turn") if data.get(k)]
    return "  ".join(parts)


#: the events said on one line, from their data alone
_ONE_LINE: dict[str, Callable[[Mapping[str, Any]], str]] = {
    "turn.started": lambda data: f"attempt {data.get('attempt', '?')}",
    "input.resolved": _resolved,
    "context.compacted": lambda data: (
        f"{data.get('model', '')} seq {data.get('from_seq')}..{data.get('to_seq')}"
    ),
    "turn.definition_changed": _definition_changed,
    "turn.cancel_requested": _by_reason,
    "turn.cancelled": _by_reason,
    "turn.completed": lambda data: f"result: {result_text(data.get('result'))}",
    "turn.failed": lambda data: f"error: {error_text(data.get('error'))}",
}


def event_lines(event: Event) -> list[str]:
    """What one committed event says, on one or a few lines (no seq, no type)."""
    data, kind = event.data, event.type
    if kind in _ONE_LINE:
        lines = [_ONE_LINE[kind](data)]
    elif kind == "turn.accepted":
        lines = _accepted(data)
    elif kind == "model.completed":
        lines = _model_lines(data)
    elif kind in ("tool.completed", "tool.interrupted"):
        lines = _tool_lines(data)
    elif kind == "input.requested":
        lines = [
            _request_line(data),
            *(f"answer: {h}" for h in answer_hints(event.session_id, event.turn_id or "", data)),
        ]
    else:
        lines = [compact(data)]
    if event.step is not None and kind != "turn.accepted":
        lines[0] = f"step {event.step}  {lines[0]}".rstrip()
    return [line for line in lines if line] or [""]


def event_text(event: Event) -> Text:
    """``  seq   3  model.completed    step 1  demo/weather: …``, and any further lines
    indented under the first's text."""
    prefix = f"  seq {event.seq:>3}  "
    kind = f"{event.type:<18} "
    lines = event_lines(event)
    text = Text(prefix)
    text.append(kind, style=_EVENT_STYLE.get(event.type, ""))
    text.append(lines[0])
    indent = " " * (len(prefix) + len(kind))
    for line in lines[1:]:
        text.append("\n" + indent)
        text.append(line, style="dim" if line.startswith("answer:") else "")
    return text


# -- turns and timelines ---------------------------------------------------------------


def agent_name(turn: Turn) -> str:
    """``support@2``: the agent and the version it runs (the name alone when the API
    declares no such version)."""
    return turn.agent if turn.agent_version is None else f"{turn.agent}@{turn.agent_version}"


def held_line(turn: Turn) -> str:
    assert turn.held is not None
    return f"held: {turn.held.reason}, no live worker serves {turn.held.definition_hash[:HASH]}"


def turn_text(turn: Turn) -> Text:
    """A turn in a few lines: its id and state, then its result, error or wait."""
    text = Text("turn ")
    text.append(turn.turn_id, style="bold")
    text.append("  ")
    text.append_text(state(turn.state))
    text.append(
        f"  session {turn.session_id}  agent {agent_name(turn)}  attempt {turn.attempt}"
        f"  seq {turn.accepted_seq}"
    )
    if turn.cancel_requested and not turn.terminal:
        text.append("  (cancel requested)", style="magenta")
    extra: list[tuple[str, str]] = []
    if turn.result is not None:
        extra.append((f"result: {result_text(turn.result)}", "green"))
    if turn.error is not None:
        extra.append((f"error: {error_text(turn.error)}", "red"))
    extra.extend(
        (line, "yellow" if i == 0 else "dim") for i, line in enumerate(pending_lines(turn))
    )
    if turn.held is not None and not turn.terminal:
        extra.append((held_line(turn), "yellow"))
    if turn.paced is not None and not turn.terminal:
        extra.append((f"paced until {when(turn.paced.until)}: {turn.paced.limit}", "yellow"))
    for line, style in extra:
        text.append("\n  ")
        text.append(line, style=style)
    return text


def timeline(tl: Timeline, *, boxed: bool = True) -> Group:
    """A turn's timeline: its summary, then the steps, attempts and waits tables."""
    parts: list[RenderableType] = [turn_text(tl.turn)]
    parts.append(Text(f"  elapsed {duration(tl.elapsed_ms)}"))
    steps = table(
        "step",
        "kind",
        "name",
        "attempt",
        "fence",
        "duration",
        "retries",
        "outcome",
        "usage",
        title="steps",
        boxed=boxed,
    )
    for s in tl.steps:
        steps.add_row(
            "" if s.step is None else str(s.step),
            s.kind,
            s.name or "",
            str(s.attempt),
            str(s.fence),
            duration(s.duration_ms),
            str(s.retries),
            Text(s.outcome, style="green" if s.outcome == "ok" else "red"),
            usage(s.usage) + ("" if s.cost is None else f"  ${s.cost:.4f}"),
        )
    parts.extend((Text(""), steps))
    attempts = table("attempt", "fence", "seq", "started", title="attempts", boxed=boxed)
    for a in tl.attempts:
        attempts.add_row(str(a.attempt), str(a.fence), str(a.seq), when(a.started_at))
    parts.extend((Text(""), attempts))
    if tl.waits:
        waits = table(
            "request",
            "kind",
            "step",
            "tool",
            "seq",
            "waited",
            "outcome",
            "answered by",
            title="waits",
            boxed=boxed,
        )
        for w in tl.waits:
            waits.add_row(
                w.request_id,
                w.kind,
                "" if w.step is None else str(w.step),
                w.tool or "",
                str(w.requested_seq),
                duration(w.waited_ms),
                w.outcome or Text("open", style="yellow"),
                w.answered_by or "",
            )
        parts.extend((Text(""), waits))
    return Group(*parts)


def sessions_table(sessions: Iterable[Session], *, boxed: bool = True) -> Table:
    t = table("session", "agent", "state", "head", "active turn", "updated", boxed=boxed)
    for s in sessions:
        t.add_row(
            s.session_id,
            s.agent,
            state(s.state),
            str(s.head_seq),
            s.active_turn or "",
            when(s.updated_at),
        )
    return t


def projects_table(projects: Iterable[Project], *, boxed: bool = True) -> Table:
    t = table("project", "owner", "overrides", "updated", boxed=boxed)
    for p in projects:
        agents = sorted((p.overrides.get("agents") or {}).keys())
        t.add_row(p.project_id, p.owner, ", ".join(agents) or "none", when(p.updated_at))
    return t


def turns_table(turns: Iterable[Turn], *, boxed: bool = True) -> Table:
    t = table("turn", "state", "agent", "attempt", "seq", "updated", "outcome", boxed=boxed)
    for turn in turns:
        if turn.pending_input is not None:
            outcome = f"waiting for {turn.pending_input.kind} {turn.pending_input.request_id}"
        elif turn.held is not None and not turn.terminal:
            outcome = held_line(turn)
        else:
            outcome = error_text(turn.error) or result_text(turn.result)
        t.add_row(
            turn.turn_id,
            state(turn.state),
            agent_name(turn),
            str(turn.attempt),
            str(turn.accepted_seq),
            when(turn.updated_at),
            short(outcome, 60),
        )
    return t


def tokens_table(entries: Sequence[Mapping[str, str]], *, boxed: bool = True) -> Table:
    """``TURNKEEP_TOKENS`` entries: tenant, subject, role and the digest's first 12 hex."""
    t = table("tenant", "subject", "role", "sha256", boxed=boxed)
    for e in entries:
        t.add_row(e["tenant"], e["subject"], e["role"], e["sha256"][:12] + "…")
    return t
