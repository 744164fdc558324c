"""Waiting for a turn and following a session's events, as ``submit --wait|--follow``
and ``tail`` do: the status line, the live model text, where a tail starts and the
exit status of the turn it ended at."""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass

import typer

from turnkeep import render
from turnkeep.cli.output import EXIT_TURN_FAILED, Out
from turnkeep.client import Client, Delta
from turnkeep.models import Turn

#: a turn in these states waits for a person: ``--wait`` returns there
PARKED_STATES = frozenset({"waiting", "needs_reconciliation"})


@contextlib.contextmanager
def interruptible() -> Iterator[None]:
    """Ctrl-C while waiting or following: exit 130 quietly (the turn goes on)."""
    try:
        yield
    except KeyboardInterrupt:
        raise typer.Exit(130) from None


def parked(turn: Turn) -> bool:
    """The turn waits for someone (an answered request: it resumes, it waits no more)."""
    pending = turn.pending_input
    return turn.state in PARKED_STATES and not (pending is not None and pending.resolved)


def wait_turn(tk: Client, turn: Turn, timeout: float, out: Out) -> Turn:
    """The turn once it settled or parked (waits for someone), or as it is after
    ``timeout`` seconds (the long poll answers a parked turn at once); the status line
    follows the state between polls."""
    deadline = time.monotonic() + timeout
    with interruptible(), out.status(f"turn {turn.turn_id}: {turn.state}") as status:
        while not (turn.terminal or parked(turn)):
            left = deadline - time.monotonic()
            if left <= 0:
                break
            turn = tk.turns.wait(turn.session_id, turn.turn_id, min(left, 5.0))
            if status is not None:
                status.update(f"turn {turn.turn_id}: {turn.state}")
    return turn


def start_of(tk: Client, session_id: str, turn_id: str | None) -> int:
    """Where a tail starts: at the turn's admission (``turn_id``, else the session's
    active turn, else its newest one), or the session's head when it has no turn."""
    if turn_id is not None:
        return tk.turns.get(session_id, turn_id).accepted_seq - 1
    session = tk.sessions.get(session_id)
    if session.active_turn is not None:
        return tk.turns.get(session_id, session.active_turn).accepted_seq - 1
    newest = tk.turns.list(session_id, limit=1).turns
    return newest[0].accepted_seq - 1 if newest else session.head_seq


@dataclass
class _DeltaLine:
    """The model's text as it is written, on one line per step, closed by the committed
    event that follows: speculative (a reconnect loses it; ``model.completed`` holds
    what counts)."""

    out: Out
    open: bool = False

    def add(self, delta: Delta) -> None:
        if self.out.json:
            self.out.line({"type": "model.delta", **delta.model_dump(mode="json")})
            return
        if not delta.text:
            return
        if not self.open:
            sys.stdout.write(f"  {'…':>7}  {'model.delta':<18} ")
        sys.stdout.write(delta.text.replace("\n", " "))
        sys.stdout.flush()
        self.open = True

    def close(self) -> None:
        if self.open:
            sys.stdout.write("\n")
            self.open = False


def follow(
    out: Out,
    tk: Client,
    session_id: str,
    after: int,
    *,
    turn_id: str | None = None,
    until_settled: bool = False,
) -> str | None:
    """Print the session's events after ``after`` as they commit, until ``turn_id``'s
    terminal event (only its events are shown), or with ``until_settled`` until a
    terminal event leaves the session idle; without either, until Ctrl-C. The type of
    the terminal event it ended at, if any."""
    if until_settled and turn_id is None:
        session = tk.sessions.get(session_id)
        if session.state == "idle" and after >= session.head_seq:
            return None
    deltas = _DeltaLine(out)
    with interruptible():
        for event in tk.sessions.stream(session_id, after=after, deltas=True):
            if turn_id is not None and event.turn_id != turn_id:
                continue
            if isinstance(event, Delta):
                deltas.add(event)
                continue
            deltas.close()
            if out.json:
                out.line(event.model_dump(mode="json"))
            else:
                out.show(render.event_text(event))
            if not event.terminal:
                continue
            if turn_id is not None or (
                until_settled and tk.sessions.get(session_id).state == "idle"
            ):
                return event.type
    return None


def settled_status(kind: str | None) -> int:
    """The exit status of a followed turn that ended with an event of type ``kind``."""
    return EXIT_TURN_FAILED if kind in ("turn.failed", "turn.cancelled") else 0
