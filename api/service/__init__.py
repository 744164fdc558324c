"""The transport-free core of the API: admit, read, wait, follow, cancel and answer.

Every surface (the HTTP routes in api/http/, MCP, A2A, ACP, workflow nodes) calls
these with the caller's ``Principal``, so idempotency, the 409 on a reused id with
other input, tenancy, roles, bounds and quotas and the journal behave the same
everywhere. They raise typed errors only (``turnkeep.store.errors``, ``turnkeep.runtime.errors`` and
``turnkeep.api.errors``); each surface translates them at its edge (HTTP: api/problems.py).

One module per verb: ``admission`` (a turn in), ``reads`` (a turn, a session, their
listings, the long poll), ``follow`` (a session's journal, live), ``cancel``,
``answers`` (to input requests), ``forks``; and what they share: ``access`` (who may
write, who may see a session), ``ids``, ``pages`` (keyset cursors), ``bounds``,
``projects``, ``attachments``, and the read projections ``transcript`` and
``timeline``.

Roles: a ``reader`` may read and follow, never write: every write refuses it
(``access.may_write``: ``ForbiddenRole``) before it looks anything up.

Projects (projects.py): a session in a project is its owner's alone. Every function
here that reaches a session checks the project's stored owner first
(``access.visible``: one read of the session and its project by primary key) and
answers anyone else exactly as for a missing session. A session's project and a
project's owner never change, so a check made before the read holds for it.

A write returns what it committed; the work that follows it (publish the events,
enqueue the session) is a separate ``after_*`` function, because HTTP runs it once
the answer went out while other surfaces run it at once.
"""
