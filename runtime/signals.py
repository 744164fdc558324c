"""Control-flow signals: how the runtime tells a running turn to stop. One root,
apart from the errors a client sees (``runtime.errors``, ``store.errors``): a signal
never becomes an HTTP answer or a turn's error, it only unwinds the loop.
"""

from __future__ import annotations


class Signal(Exception):
    """Root of every control-flow signal."""


class LeaseLost(Signal):
    """Raised when a fenced write matched no row, or the heartbeat could not keep the
    lease: another worker may hold a newer fence. The worker stops writing at once."""


class TurnCancelled(Signal):
    """Raised at a safe point when the turn's cancellation was requested."""


class ModelCallCancelled(Signal):
    """Raised when a streaming model call (or its retry backoff) was aborted because the
    turn is being cancelled or its lease was lost."""
