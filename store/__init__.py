"""Postgres schema and migrations, the CAS transitions, the journal, the Redis lease
and the live-event channel. Only this package runs SQL or Redis commands."""
