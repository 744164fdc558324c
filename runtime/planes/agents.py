"""The agents plane."""

from turnkeep.runtime.planes import Plane

PLANE = Plane(
    name="agents",
    order=60,
    about="agents' versions, upgrades of in-flight turns, feedback (docs/evaluation.md)",
    routers=("turnkeep.api.http.agents:router",),
    parts=("feedback",),
    settings=("feedback",),
    holds=("feedback",),
)
