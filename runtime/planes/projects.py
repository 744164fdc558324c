"""The projects plane."""

from turnkeep.runtime.planes import Plane

PLANE = Plane(
    name="projects",
    order=40,
    about="projects and their agent overrides (docs/projects.md)",
    routers=("turnkeep.api.http.projects:router",),
    parts=("projects",),
    holds=("projects",),
)
