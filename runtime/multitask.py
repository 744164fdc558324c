"""Double-texting: what admitting a turn does to a session that is still busy.

A session runs its turns one at a time (its lane). A client that sends a new message
while an earlier turn is active chooses, per admission, what happens to it. The
values are public and persisted in clients' code: pinned in
tests/unit/test_persisted_names.py.
"""

from __future__ import annotations

from enum import StrEnum


class Multitask(StrEnum):
    """The admission strategy for a session with an active (non-terminal) turn."""

    #: the default: the new turn waits its place in the lane (FIFO by admission)
    ENQUEUE = "enqueue"
    #: refused with 409 ``session_busy`` while a turn is active; nothing is written
    REJECT = "reject"
    #: admitted, and every earlier active turn is cancelled in the same transaction:
    #: unattended ones at once, a running one at its worker's next safe point
    INTERRUPT = "interrupt"
