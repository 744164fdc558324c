"""A2A ids: a task id is a turn id, a context id a session id (api/a2a/__init__.py).

A message's messageId is its idempotency key: its digest is the turn id's tail, and
the session id of a message without a contextId.
"""

from __future__ import annotations

import hashlib
import re

from a2a.utils.errors import InvalidParamsError

#: hex digits of the messageId's SHA-256 in a turn id (and in a derived session id)
DIGEST = 32
#: the longest contextId an A2A message may name: its turn id must stay within 128
MAX_CONTEXT = 128 - 1 - DIGEST
_CONTEXT = re.compile(rf"^[A-Za-z0-9._-]{{1,{MAX_CONTEXT}}}$")
_TASK = re.compile(rf"^(?P<sid>[A-Za-z0-9._-]{{1,{MAX_CONTEXT}}})\.[0-9a-f]{{{DIGEST}}}$")


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:DIGEST]


def session_for(context_id: str, message_id: str) -> str:
    """The session of a new message: its context, or one derived from its messageId."""
    if not context_id:
        return f"a2a-{_digest(message_id)}"
    return context_of(context_id)


def context_of(context_id: str) -> str:
    """The session a request's contextId names; one that no session id can be (a NUL
    in it would reach Postgres) is invalid params, never an internal error."""
    if not _CONTEXT.fullmatch(context_id):
        raise InvalidParamsError(
            f"a contextId must match [A-Za-z0-9._-]{{1,{MAX_CONTEXT}}}",
            data={"code": "validation_error"},
        )
    return context_id


def turn_id_for(session_id: str, message_id: str) -> str:
    return f"{session_id}.{_digest(message_id)}"


def session_of(task_id: str) -> str | None:
    """The session a task id names, or None for an id no A2A message gave a turn."""
    found = _TASK.fullmatch(task_id)
    return found.group("sid") if found else None
