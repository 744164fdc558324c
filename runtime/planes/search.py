"""The search plane."""

from turnkeep.runtime.planes import Plane

PLANE = Plane(
    name="search",
    order=90,
    about="searching turns and sessions by labels and filters (docs/search.md)",
    routers=("turnkeep.api.http.search:router",),
    parts=("search",),
    holds=("turn_metadata", "session_metadata"),
)
