"""Schedules: turns admitted on a cron expression or at a time, each tick through the
one admission; the beat's pass fires the due ones."""

from turnkeep.runtime.names import TASK_FIRE_SCHEDULES
from turnkeep.runtime.planes import Beat, Plane

PLANE = Plane(
    name="schedules",
    order=50,
    about="turns admitted on a cron or at a time (docs/flow-control.md)",
    routers=("turnkeep.api.http.schedules:router",),
    parts=("schedules",),
    beat=(Beat("schedules", TASK_FIRE_SCHEDULES, "schedules.interval"),),
    settings=("schedules",),
    holds=("schedules",),
)
