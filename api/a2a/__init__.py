"""A2A: every agent is an A2A agent, over the service (api/service/).

a2a-sdk's JSON-RPC binding (protocol 1.0) at ``POST /a2a/{agent}`` and ``POST /a2a``,
with public agent cards; the task id is the turn id, the context id the session id.
The protocol as turnkeep speaks it (routes, ids, states, answers, waits, errors) is
docs/a2a.md.

One module per concern, imported in this order (each only from those before it):

- ``ids``: task, context and session ids, from a message's ids;
- ``cards``: the agent cards;
- ``messages``: what an incoming message says (a turn's input, an answer);
- ``translate``: a turn as a task, a journal event as stream events;
- ``errors``: turnkeep's typed errors as A2A's JSON-RPC errors (the edge);
- ``call``: one JSON-RPC call over the submit path (admit, answer, follow, settle);
- ``handler``: a2a-sdk's request handler, one method per JSON-RPC method;
- ``routes``: the Starlette routes (cards, JSON-RPC endpoints) ``api/app.py`` mounts.

This package imports none of its modules: ``turnkeep.api.a2a.routes`` is the entry point.
"""
