"""The limits plane."""

from turnkeep.runtime.planes import Plane

PLANE = Plane(
    name="limits",
    order=100,
    about="max_running per tenant and agent, and the turns it holds (docs/flow-control.md)",
    routers=("turnkeep.api.http.max_running:router",),
    parts=("max_running",),
    settings=("limits",),
    holds=("tenant_limits", "held:{tenant}", "held:{tenant}:agent:*"),
)
