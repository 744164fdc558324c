"""The a2a plane."""

from turnkeep.runtime.planes import Plane

PLANE = Plane(
    name="a2a",
    order=200,
    about="the A2A surface (docs/a2a.md)",
    routers=("turnkeep.api.a2a.routes:router",),
)
