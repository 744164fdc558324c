"""Workflow nodes, and the webhooks a settled turn sends: delivered from the outbox,
at least once, the beat's pass the safety net behind the prompt delivery."""

from turnkeep.runtime.names import TASK_DELIVER_WEBHOOKS
from turnkeep.runtime.planes import Beat, Plane

PLANE = Plane(
    name="workflows",
    order=10,
    about="workflow nodes and the webhooks a settled turn sends (docs/operations.md)",
    routers=("turnkeep.api.http.workflows:router",),
    parts=("outbox",),
    beat=(Beat("webhook-delivery", TASK_DELIVER_WEBHOOKS, "webhooks.interval"),),
    settings=("webhooks",),
    holds=("webhooks",),
)
