"""The commands on one turn or session: ``submit`` (``--wait``, ``--follow``), ``tail``,
``show``, ``cancel``, ``fork`` and ``rerun``."""

from __future__ import annotations

import hashlib
import json
import mimetypes
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.text import Text

from turnkeep import render
from turnkeep.cli.following import follow, parked, settled_status, start_of, wait_turn
from turnkeep.cli.output import (
    EXIT_TIMEOUT,
    EXIT_TURN_FAILED,
    JsonOpt,
    TokenOpt,
    UrlOpt,
    out_for,
)
from turnkeep.cli.search_commands import parse_meta
from turnkeep.runtime.multitask import Multitask

SessionArg = Annotated[str, typer.Argument(help="the session id")]
TurnArg = Annotated[str, typer.Argument(help="the turn id")]


def _messages(text: str | None, input_file: Path | None) -> str | list[dict[str, str]]:
    if (text is None) == (input_file is None):
        raise typer.BadParameter("give either TEXT or --input-file")
    if text is not None:
        return text
    assert input_file is not None
    try:
        raw = sys.stdin.read() if str(input_file) == "-" else input_file.read_text()
        messages = json.loads(raw)
    except (OSError, ValueError) as exc:
        raise typer.BadParameter(str(exc), param_hint="--input-file") from None
    if not (
        isinstance(messages, list)
        and messages
        and all(isinstance(m, dict) and {"role", "content"} <= set(m) for m in messages)
    ):
        raise typer.BadParameter(
            'a JSON list of {"role": …, "content": …} messages', param_hint="--input-file"
        )
    return [{"role": str(m["role"]), "content": str(m["content"])} for m in messages]


def _attachment_file(path: Path) -> tuple[str, str, bytes, str]:
    """(filename, content type, bytes, upload key) of a file to attach. The key is
    the content's: submitting again uploads nothing new, the same attachment answers."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise typer.BadParameter(str(exc), param_hint="--attach") from None
    kind = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
    if path.suffix.lower() == ".md":
        kind = "text/markdown"  # not in every platform's mime table
    digest = hashlib.sha256(path.name.encode() + b"\0" + data).hexdigest()
    return path.name, kind, data, f"att-{digest[:40]}"


def submit(
    ctx: typer.Context,
    session: SessionArg,
    agent: Annotated[str, typer.Argument(help="the agent's name")],
    text: Annotated[str | None, typer.Argument(help="the user message")] = None,
    input_file: Annotated[
        Path | None,
        typer.Option(
            "--input-file", "-f", help='JSON list of {"role", "content"} messages ("-": stdin)'
        ),
    ] = None,
    idempotency_key: Annotated[
        str | None, typer.Option(help="the turn's id (default: a new one)")
    ] = None,
    multitask: Annotated[
        Multitask | None, typer.Option(help="when the session is busy (default: enqueue)")
    ] = None,
    wait: Annotated[bool, typer.Option("--wait", help="wait until it settles or parks")] = False,
    follow_: Annotated[
        bool, typer.Option("--follow", help="tail its events until it settles")
    ] = False,
    timeout: Annotated[float, typer.Option(help="seconds --wait waits at most")] = 300.0,
    project: Annotated[
        str | None,
        typer.Option(help="your project the session belongs to (its first turn sets it)"),
    ] = None,
    attach: Annotated[
        list[Path] | None,
        typer.Option(
            "--attach",
            "-a",
            metavar="FILE",
            help="a file to upload to the (existing) session and name in the turn; repeatable",
        ),
    ] = None,
    agent_version: Annotated[
        str | None,
        typer.Option(
            "--agent-version", metavar="VERSION", help="a declared version (default: the latest)"
        ),
    ] = None,
    expires_after: Annotated[
        int | None,
        typer.Option(
            "--expires-after",
            metavar="SECONDS",
            min=1,
            help="the session's TTL: erased this long after its newest turn",
        ),
    ] = None,
    meta: Annotated[
        list[str] | None,
        typer.Option("--meta", metavar="KEY=VALUE", help="a label of the turn; repeatable"),
    ] = None,
    session_meta: Annotated[
        list[str] | None,
        typer.Option(
            "--session-meta", metavar="KEY=VALUE", help="a label of a new session; repeatable"
        ),
    ] = None,
    url: UrlOpt = None,
    token: TokenOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Submit a turn. --wait for its result, or --follow its events."""
    out = out_for(ctx, url, token, as_json)
    messages = _messages(text, input_file)
    files = [_attachment_file(path) for path in attach or []]
    with out.client() as tk:
        attachments = [
            tk.attachments.upload(
                session, data, filename=name, content_type=kind, idempotency_key=key
            ).attachment_id
            for name, kind, data, key in files
        ]
        turn = tk.turns.admit(
            session,
            agent,
            messages,
            idempotency_key=idempotency_key,
            multitask=None if multitask is None else multitask.value,
            project=project,
            attachments=attachments,
            agent_version=agent_version,
            expires_after=expires_after,
            metadata=parse_meta(meta or ()),
            session_metadata=parse_meta(session_meta or ()),
        )
        if follow_:
            if not out.json:
                out.show(render.turn_text(turn))
            ended = follow(out, tk, session, turn.accepted_seq - 1, turn_id=turn.turn_id)
            raise typer.Exit(settled_status(ended))
        if wait:
            turn = wait_turn(tk, turn, timeout, out)
        out.turn(turn)
        if wait and not (turn.terminal or parked(turn)):
            raise typer.Exit(EXIT_TIMEOUT)
        if turn.state in ("failed", "cancelled"):
            raise typer.Exit(EXIT_TURN_FAILED)


def tail(
    ctx: typer.Context,
    session: SessionArg,
    after: Annotated[
        int | None,
        typer.Option(
            help="start after this seq (default: where the current or newest turn starts)"
        ),
    ] = None,
    turn: Annotated[
        str | None, typer.Option("--turn", help="only this turn's events, until it ends")
    ] = None,
    until_settled: Annotated[
        bool, typer.Option("--until-settled", help="stop once the session is idle")
    ] = False,
    url: UrlOpt = None,
    token: TokenOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Follow a session's events live. Resumes by itself after a dropped connection."""
    out = out_for(ctx, url, token, as_json)
    with out.client() as tk:
        start = after if after is not None else start_of(tk, session, turn)
        ended = follow(out, tk, session, start, turn_id=turn, until_settled=until_settled)
    raise typer.Exit(settled_status(ended) if turn is not None else 0)


def show(
    ctx: typer.Context,
    session: SessionArg,
    turn: TurnArg,
    url: UrlOpt = None,
    token: TokenOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """A turn's timeline. Its steps, attempts and waits, as tables."""
    out = out_for(ctx, url, token, as_json)
    with out.client() as tk:
        timeline = tk.turns.timeline(session, turn)
    if out.json:
        out.document(timeline.model_dump(mode="json"))
    else:
        out.show(render.timeline(timeline, boxed=out.console.is_terminal))


def cancel(
    ctx: typer.Context,
    session: SessionArg,
    turn: TurnArg,
    url: UrlOpt = None,
    token: TokenOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Cancel a turn. At once, unless a worker is stepping it."""
    out = out_for(ctx, url, token, as_json)
    with out.client() as tk:
        out.turn(tk.turns.cancel(session, turn))


def fork(
    ctx: typer.Context,
    session: Annotated[str, typer.Argument(help="the session to fork")],
    at_seq: Annotated[int, typer.Argument(min=1, help="the last seq the fork keeps")],
    new_session: Annotated[
        str | None, typer.Option(help="the new session's id (default: a new one)")
    ] = None,
    url: UrlOpt = None,
    token: TokenOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Fork a session at a seq into a new one (the source is untouched)."""
    out = out_for(ctx, url, token, as_json)
    with out.client() as tk:
        forked = tk.sessions.fork(session, at_seq, new_session_id=new_session)
    if out.json:
        out.document(forked.model_dump(mode="json"))
        return
    cut = f"; left out: {', '.join(forked.cut_turns)}" if forked.cut_turns else ""
    out.show(
        Text(
            f"{forked.session_id}  forked from {session} at seq {at_seq}"
            f" (head {forked.head_seq}){cut}"
        )
    )


def rerun(
    ctx: typer.Context,
    session: SessionArg,
    turn: TurnArg,
    from_step: Annotated[
        int, typer.Option("--from-step", min=1, help="the first step run again (or replaced)")
    ],
    tool_result: Annotated[
        str | None, typer.Option(help="the edited result of from-step's tool call")
    ] = None,
    tool_error: Annotated[
        bool, typer.Option("--tool-error", help="the edited tool result is an error")
    ] = False,
    model_answer: Annotated[
        str | None, typer.Option(help="the edited text of from-step's model answer")
    ] = None,
    in_fork: Annotated[
        bool, typer.Option("--fork", help="in a fork of the session, not the session")
    ] = False,
    new_turn: Annotated[str | None, typer.Option(help="the new turn's id")] = None,
    url: UrlOpt = None,
    token: TokenOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Re-run a turn from a step as a new turn: the steps before it are reused, not run."""
    if tool_result is not None and model_answer is not None:
        raise typer.BadParameter("give at most one of --tool-result and --model-answer")
    replace: dict[str, object] | None = None
    if tool_result is not None:
        replace = {"tool_result": {"content": tool_result, "is_error": tool_error}}
    elif model_answer is not None:
        replace = {"model_answer": {"content": model_answer}}
    out = out_for(ctx, url, token, as_json)
    with out.client() as tk:
        out.turn(
            tk.turns.rerun(
                session, turn, from_step, replace=replace, fork=in_fork, idempotency_key=new_turn
            )
        )
