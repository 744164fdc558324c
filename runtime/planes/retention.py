"""The retention plane."""

from turnkeep.runtime.names import TASK_PRUNE_JOURNAL
from turnkeep.runtime.planes import Beat, Plane

PLANE = Plane(
    name="retention",
    order=120,
    about="how long the journal is kept (docs/retention.md)",
    parts=("retention",),
    beat=(Beat("journal-prune", TASK_PRUNE_JOURNAL, "retention.interval"),),
    settings=("retention",),
)
