"""The bridges plane."""

from turnkeep.runtime.planes import Plane

PLANE = Plane(
    name="bridges",
    order=70,
    about="chat bridges: Slack and signed webhooks (docs/bridges.md)",
    routers=("turnkeep.api.http.bindings:router", "turnkeep.api.http.bridges:router"),
    parts=("bridges",),
    settings=(
        "slack_signing_secret",
        "slack_bot_token",
        "slack_api_url",
        "slack_workspaces",
        "bridge_secret",
        "bridge_tenant",
    ),
    holds=("bridge_bindings",),
)
