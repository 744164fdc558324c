"""The bridges plane."""

from turnkeep.runtime.planes import Plane

PLANE = Plane(
    name="bridges",
    order=70,
    about="chat bridges: Slack and signed webhooks (docs/bridges.md)",
    routers=("turnkeep.api.http.bindings:router", "turnkeep.api.http.bridges:router"),
    parts=("bridges",),
    settings=("slack", "bridge"),
    holds=("bridge_bindings",),
)
