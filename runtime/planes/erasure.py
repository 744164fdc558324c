"""Erasing a session: on request or past its TTL; the sweep finishes erasures nobody
finished."""

from turnkeep.runtime.names import TASK_SWEEP_ERASURES
from turnkeep.runtime.planes import Beat, Plane

PLANE = Plane(
    name="erasure",
    order=130,
    about="erasing a session on request or past its TTL (docs/erasure.md)",
    parts=("erasure",),
    beat=(Beat("erasure-sweep", TASK_SWEEP_ERASURES, "erasure_interval"),),
    settings=("session_ttl", "session_ttls", "erasure_interval", "erasure_grace", "erasure_batch"),
    holds=("session_tombstones",),
)
