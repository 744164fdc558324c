"""The forks plane."""

from turnkeep.runtime.planes import Plane

PLANE = Plane(
    name="forks",
    order=20,
    about="forking a session at a turn (docs/fork-and-attachments.md)",
    routers=("turnkeep.api.http.forks:router",),
    parts=("forks",),
)
