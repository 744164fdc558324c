"""Errors of the worker. One root; each class says when it is raised."""

from __future__ import annotations


class WorkerError(Exception):
    """Root of every error the worker raises on purpose."""


class TurnCancelled(WorkerError):
    """Raised at a safe point when the turn's cancellation was requested."""
