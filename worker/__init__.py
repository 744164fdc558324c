"""The Celery app and the turn executor: lease, heartbeat, claim, the agent loop host."""
