"""Host-agnostic core of turnkeep: agent and tool definitions, providers, loop rules.

Imports nothing of Celery, FastAPI or SQLAlchemy, and nothing else of ours.
"""
