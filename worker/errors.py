"""Errors of the worker. One root; each class says when it is raised."""

from __future__ import annotations


class WorkerError(Exception):
    """Root of every error the worker raises on purpose."""


class IllegalTransition(WorkerError):
    """Raised before a commit that runtime/states.py's TRANSITIONS does not allow (a bug:
    nothing is written)."""
