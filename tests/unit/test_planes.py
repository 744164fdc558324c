"""Each feature is declared once, as a plane (runtime/planes/): the app includes its
routers, the beat runs its jobs, and every settings section, store concern and erasure
holder belongs to exactly one plane, so a new one cannot be left out of them."""

from __future__ import annotations

from collections import Counter

from fastapi import APIRouter
from fastapi.routing import APIRoute

from turnkeep.api.app import create_app
from turnkeep.runtime.planes import Plane, beat_schedule, planes, resolve
from turnkeep.runtime.settings import Settings
from turnkeep.store.erasure_registry import HOLDERS
from turnkeep.store.sql import SQL_DIR


def _once(kind: str, claimed: list[str], every: set[str]) -> None:
    twice = sorted(n for n, c in Counter(claimed).items() if c > 1)
    assert not twice, f"{kind} claimed by two planes: {twice}"
    assert set(claimed) - every == set(), f"{kind} that do not exist"
    assert every - set(claimed) == set(), f"{kind} no plane declares"


def test_the_planes_are_found_each_once() -> None:
    found = planes()
    assert {p.name for p in found} >= {"core", "schedules", "erasure", "search", "bridges"}
    assert len({p.name for p in found}) == len(found)
    assert len({p.order for p in found}) == len(found), "two planes share an order"
    assert all(isinstance(p, Plane) and p.about for p in found)


def test_every_settings_section_belongs_to_one_plane() -> None:
    _once("settings", [s for p in planes() for s in p.settings], set(Settings.model_fields))


def test_every_erasure_holder_belongs_to_one_plane() -> None:
    _once("holders", [h for p in planes() for h in p.holds], {h.name for h in HOLDERS})


def test_every_store_concern_belongs_to_one_plane() -> None:
    concerns = {f.stem for f in SQL_DIR.glob("*.sql")}
    _once("store concerns", [c for p in planes() for c in p.parts], concerns)


def test_the_app_serves_the_planes_routes_and_no_other() -> None:
    """The OpenAPI document lists the planes' routes, in the planes' order."""
    declared: list[str] = []
    for plane in planes():
        for ref in plane.routers:
            router = resolve(ref)
            assert isinstance(router, APIRouter), ref
            for route in router.routes:
                if isinstance(route, APIRoute) and route.include_in_schema:
                    declared += [] if route.path in declared else [route.path]
    app = create_app(Settings(auth={"tokens": "[]"}), own_logging=False)
    assert list(app.openapi()["paths"]) == declared


def test_beat_runs_every_planes_jobs_and_they_are_tasks() -> None:
    from turnkeep.worker.app import app

    schedule = app.conf.beat_schedule
    assert set(schedule) == {
        "recovery-scan",
        "journal-prune",
        "webhook-delivery",
        "schedules",
        "experiments",
        "erasure-sweep",
        "attachment-sweep",
    }
    for name, entry in schedule.items():
        assert entry["task"] in app.tasks, name
        assert entry["options"]["expires"] >= 1.0
    settings = Settings(schedules={"interval": 7}, evaluation={"interval": 3})
    jobs = beat_schedule(settings)
    assert jobs["schedules"]["schedule"] == 7.0 and jobs["experiments"]["schedule"] == 3.0
    assert jobs["recovery-scan"]["schedule"] == settings.lease.effective_scan_interval
