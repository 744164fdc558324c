"""Forks in the store: what a fork refuses, and the error its cut turns carry.

A fork is one transaction (``Store.fork``): lock the source session's row
(``fork_source``, FOR SHARE: the source's writers wait, its journal holds still),
then insert the new session (``fork_session``), copies of the source's turns
admitted at or before the fork's seq (``fork_turns``) and its retained events up to
that seq, same seq numbers and turn ids (``fork_events``). Nothing of it is visible
before the commit, so a crash leaves nothing behind. docs/fork-and-attachments.md.
"""

from __future__ import annotations

from store.errors import StoreError

#: the error code of a turn that was active at the fork's seq: its copy is cancelled,
#: never run (a persisted name: pinned in a test)
FORK_CUT = "fork_cut"


class ForkPointPruned(StoreError):
    """Raised when a fork's seq is before the source's earliest retained seq: the
    events up to it are gone (the journal prune)."""

    code = "fork_point_pruned"

    def __init__(self, requested: int, earliest: int, latest: int) -> None:
        super().__init__(f"seq {requested} is before the earliest retained seq {earliest}")
        self.requested = requested
        self.earliest = earliest
        self.latest = latest


class ForkPointAhead(StoreError):
    """Raised when a fork's seq is beyond the source's head seq."""

    code = "fork_point_ahead"

    def __init__(self, requested: int, head: int) -> None:
        super().__init__(f"seq {requested} is beyond the head seq {head}")
        self.requested = requested
        self.head = head


class SessionExists(StoreError):
    """Raised when a fork names a new session id that an ordinary session (not a
    fork) already has."""

    code = "session_exists"
