"""Erasing a session: on request or past its TTL; the sweep finishes erasures nobody
finished."""

from turnkeep.runtime.names import TASK_SWEEP_ERASURES
from turnkeep.runtime.planes import Beat, Plane

PLANE = Plane(
    name="erasure",
    order=130,
    about="erasing a session on request or past its TTL (docs/erasure.md)",
    parts=("erasure",),
    beat=(Beat("erasure-sweep", TASK_SWEEP_ERASURES, "erasure.interval"),),
    settings=("erasure",),
    holds=("session_tombstones",),
)
