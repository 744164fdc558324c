"""A2A: every agent is an A2A agent, over the service (api/service/).

Routes (a2a-sdk's JSON-RPC binding, protocol 1.0; the cards are public, the rest needs
the bearer token, whose tenant scopes every task):

- ``GET /a2a/{agent}/.well-known/agent-card.json``: the agent's card, naming
  ``POST /a2a/{agent}``, where the agent's JSON-RPC methods are served;
- ``GET /.well-known/agent-card.json`` (and ``/a2a/.well-known/agent-card.json``):
  every agent as a skill, naming ``POST /a2a``, where a new conversation names its
  agent in the message metadata (``{"skill": name}``).

Ids. The task id is the turn id, the context id the session id. A message without a
taskId admits a turn: into the session its contextId names, else into a new session
whose id is derived from the messageId (``a2a-`` + 32 hex digits of its SHA-256).
The turn id is ``{session id}.{32 hex digits of the messageId's SHA-256}``, so the
same messageId in the same context reaches the same turn (a retried message is a
replay, never a second turn), the same messageId with other content is refused
(``-32602``, data ``code: idempotency_conflict``), and a task id alone names its
session. Turns admitted over another surface have other ids: they are not A2A tasks.

States: queued -> submitted; running -> working; waiting and needs_reconciliation ->
input-required, the open request in the status message (a text part, and a data
part with what ``pending_input`` shows over HTTP) and in ``metadata.turnkeep``; once
answered, working again until a worker moves it; completed -> completed (the result
text, and its output when the turn had an output schema, as the ``result`` artifact
and the status message); failed -> failed (the typed error); cancelled -> canceled.

Answers. A message with a taskId answers the task's open request (``api.service
.answers.answer``): its first data part (else its text, parsed as JSON) is the answer,
validated against the request's ``response_schema``; ``metadata.request_id`` may name
the request answered (refused when it is not the open one).

A non-streaming SendMessage waits (at most ``TURNKEEP_MAX_WAIT`` seconds, then it
answers the task as it is) until the task ends or needs input; streams (send and
subscribe) are read from the journal (``api.service.follow``) and end with it.
Errors are translated at this edge (``errors.edge``) into A2A's JSON-RPC errors, with
the problem code of the HTTP surface in ``data.code``.

One module per concern, imported in this order (each only from those before it):

- ``ids``: task, context and session ids, from a message's ids;
- ``cards``: the agent cards;
- ``messages``: what an incoming message says (a turn's input, an answer);
- ``translate``: a turn as a task, a journal event as stream events;
- ``errors``: turnkeep's typed errors as A2A's JSON-RPC errors (the edge);
- ``call``: one JSON-RPC call over the submit path (admit, answer, follow, settle);
- ``handler``: a2a-sdk's request handler, one method per JSON-RPC method;
- ``routes``: the Starlette routes (cards, JSON-RPC endpoints) ``api/app.py`` mounts.

This package imports none of its modules: ``api.a2a.routes`` is the entry point.
"""
