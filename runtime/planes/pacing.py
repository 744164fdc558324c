"""The pacing plane."""

from turnkeep.runtime.planes import Plane

PLANE = Plane(
    name="pacing",
    order=110,
    about="provider rate limits shared by every worker (docs/flow-control.md)",
    settings=("pacing",),
    holds=("paced:{tenant}:{session}",),
)
