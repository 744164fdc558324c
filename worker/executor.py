"""The executor's old home, kept for one release: it re-exports the names that moved.

A delivery (lease, claim, the lane) is worker/lane.py; the turn handle (commit, fail,
ask, settle, cancel polling) worker/turn.py; the loop worker/runner.py; the steps
worker/steps/ (model, tool, delegate); the decisions runtime/decisions.py. Import
from those; module constants (``CANCEL_POLL``, ``DELTA_FLUSH_CHARS``) are read where
they now live, so patch them there.
"""

from __future__ import annotations

from runtime.decisions import UNKNOWN_OUTCOME
from worker.errors import ModelNotAllowed, ProcessorBlocked
from worker.lane import Lane, RunOutcome, run_session, taken_over
from worker.runner import TurnRunner
from worker.steps import Verdict
from worker.steps.model import DELTA_FLUSH_CHARS, DELTA_FLUSH_SECONDS, DeltaBuffer
from worker.turn import CANCEL_POLL

__all__ = [
    "CANCEL_POLL",
    "DELTA_FLUSH_CHARS",
    "DELTA_FLUSH_SECONDS",
    "UNKNOWN_OUTCOME",
    "DeltaBuffer",
    "Lane",
    "ModelNotAllowed",
    "ProcessorBlocked",
    "RunOutcome",
    "TurnRunner",
    "Verdict",
    "run_session",
    "taken_over",
]
