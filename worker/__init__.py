"""The Celery app and the turn executor: the lane (lease, claim), the turn handle, the
loop (runner) and its steps (model, tool, delegate)."""
