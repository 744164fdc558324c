"""The console plane."""

from turnkeep.runtime.planes import Plane

PLANE = Plane(
    name="console",
    order=210,
    about="the web console (docs/console.md)",
    routers=("turnkeep.api.console:router",),
)
