"""Errors of the worker: the ``WorkerError`` branch of the one tree
(runtime/errors.py). Each class says when it is raised; a turn that fails on one
ends with the ``ErrorCode`` its ``code`` names (persisted, runtime/states.py).

A lost lease or a cancellation is no error: those are control-flow signals
(``turnkeep.runtime.signals``).
"""

from __future__ import annotations

from typing import Any, ClassVar

from turnkeep.runtime.errors import TurnkeepError
from turnkeep.runtime.states import ErrorCode


class WorkerError(TurnkeepError):
    """Root of every error the worker raises on purpose (a turn's own failure, never a
    client's request: answered as ``internal`` should one reach an edge)."""

    code = "worker_error"
    title: ClassVar[str | None] = None


class IllegalTransition(WorkerError):
    """Raised when a commit is asked for that runtime/states.py's TRANSITIONS does not
    allow, before anything is written (a bug)."""

    code = "illegal_transition"


class ModelNotAllowed(WorkerError):
    """Raised when a reply came from a model the agent's policy does not allow."""

    code = ErrorCode.MODEL_NOT_ALLOWED.value


class ProcessorBlocked(WorkerError):
    """Raised when a processor of the agent's definition blocked the turn
    (runtime/processors.py). ``receipts``: those of the call's runs up to and including
    the blocking stage's, which no ``model.completed`` will carry (the turn's
    ``turn.failed`` does)."""

    code = ErrorCode.PROCESSOR_BLOCKED.value

    def __init__(self, message: str, receipts: list[dict[str, Any]]) -> None:
        super().__init__(message)
        self.receipts = receipts
