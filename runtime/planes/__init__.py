"""Planes: what a feature of turnkeep declares, in one place (docs/architecture.md
"Planes").

A plane is one module here that defines ``PLANE``: its HTTP routers, its store parts,
its beat jobs, its settings and what it holds of a session (the erasure registry's
names). The API includes the routers of every plane (``api/app.py``), the worker's beat
schedule is every plane's jobs (``worker/app.py``), and tests/unit/test_planes.py holds
that every setting, every store concern and every erasure holder belongs to exactly one
plane. Adding a plane is adding a module here: no central list names them.

Declarations name code by its import path (``"turnkeep.api.http.schedules:router"``),
not by the object: this package is read by the API and the worker alike, and the
runtime imports nothing of theirs (tests/unit/test_imports.py); the test resolves every
name.
"""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass
from functools import cache
from typing import Any


@dataclass(frozen=True)
class Beat:
    """A job beat sends every so often; a run nobody took in time expires (the next one
    supersedes it)."""

    #: the beat schedule's entry
    name: str
    #: the Celery task's name (runtime/names.py)
    task: str
    #: the interval in seconds: "<section>.<attribute>" of Settings
    every: str


@dataclass(frozen=True)
class Plane:
    name: str
    #: where its routes come in the app: a path two planes both match goes to the lower
    order: int
    #: what it is, in one line, and the page that says more
    about: str
    #: FastAPI routers, "module:attribute", included in this order
    routers: tuple[str, ...] = ()
    #: its store concerns: store/<part>.py with its statements in store/sql/<part>.sql
    parts: tuple[str, ...] = ()
    beat: tuple[Beat, ...] = ()
    #: its sections of Settings (runtime/settings.py)
    settings: tuple[str, ...] = ()
    #: what it holds of a session: names of store/erasure_registry.py's holders
    holds: tuple[str, ...] = ()


@cache
def planes() -> tuple[Plane, ...]:
    """Every plane of this package, in their routes' order."""
    found = []
    for module in pkgutil.iter_modules(__path__):
        plane = importlib.import_module(f"{__name__}.{module.name}").PLANE
        if not isinstance(plane, Plane) or plane.name != module.name:
            raise TypeError(f"{__name__}.{module.name}.PLANE is not its Plane")
        found.append(plane)
    return tuple(sorted(found, key=lambda p: (p.order, p.name)))


def resolve(ref: str) -> Any:
    """The object a "module:attribute" reference names."""
    module, _, attribute = ref.partition(":")
    return getattr(importlib.import_module(module), attribute)


def beat_schedule(settings: Any) -> dict[str, dict[str, Any]]:
    """Celery's ``beat_schedule``: every plane's jobs at their settings' intervals."""
    schedule = {}
    for plane in planes():
        for job in plane.beat:
            section, _, name = job.every.partition(".")
            every = float(getattr(getattr(settings, section), name))
            schedule[job.name] = {
                "task": job.task,
                "schedule": every,
                "options": {"expires": max(1.0, every)},
            }
    return schedule
