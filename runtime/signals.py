"""Control-flow signals: how a running turn is told to stop or to wait, and how a
reader is told to go back to the journal. One root, ``Signal``, apart from the error
tree (``turnkeep.runtime.errors.TurnkeepError``): a signal never becomes an answer or a turn's
error, it only unwinds a loop to the place that knows what to do next.
"""

from __future__ import annotations


class Signal(Exception):
    """Root of every control-flow signal (never a ``TurnkeepError``): ``LeaseLost``,
    ``Cancelling``, ``ModelCallCancelled`` here; a tool's ``ExternalAuthRequired``
    (runtime/inputs.py); a slow reader's ``Lagging`` (api/live.py)."""


class LeaseLost(Signal):
    """Raised when a fenced write matched no row, or the heartbeat could not keep the
    lease: another worker may hold a newer fence. The worker stops writing at once."""


class Cancelling(Signal):
    """Raised at a safe point when the turn's cancellation was requested: the turn is
    being cancelled (its ``turn.cancelled`` payload is ``TurnCancelled`` (runtime.payloads))."""


class ModelCallCancelled(Signal):
    """Raised when a streaming model call (or its retry backoff) was aborted because the
    turn is being cancelled or its lease was lost."""
