"""Files attached to a turn; the sweep finishes what an API process left pending or
deleting."""

from turnkeep.runtime.names import TASK_SWEEP_ATTACHMENTS
from turnkeep.runtime.planes import Beat, Plane

PLANE = Plane(
    name="attachments",
    order=30,
    about="files attached to a turn (docs/fork-and-attachments.md)",
    routers=("turnkeep.api.http.attachments:router",),
    parts=("attachments",),
    beat=(Beat("attachment-sweep", TASK_SWEEP_ATTACHMENTS, "attachments.interval"),),
    settings=("attachments",),
    holds=("attachments",),
)
