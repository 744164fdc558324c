"""Postgres schema and migrations, the statements (``Store``, store/facade.py: one
module per concern, its SQL beside it in sql/), the Redis lease and the live-event
channel. Only this package runs SQL or Redis commands."""
