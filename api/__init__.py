"""The HTTP host (FastAPI): admission, reads, SSE, cancel, auth, health and metrics.

``uvicorn turnkeep.api.app:app``. The API never imports ``worker``: it enqueues by task name.
"""
