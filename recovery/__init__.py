"""The recovery scan: finds sessions that should be running and are not, and
enqueues them. It never runs a turn itself (the claim path admits one runner).
The journal prune (retention.py): each session keeps its newest events only."""
