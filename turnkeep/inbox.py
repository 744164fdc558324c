"""The wire shapes of the inbox (``GET /v1/inbox``): the open requests a caller may answer,
across sessions. Defined once, as turnkeep/models.py's are (the client parses answers
with them; api/http/bodies.py closes them for the OpenAPI document)."""

from __future__ import annotations

from turnkeep.models import PendingInput, TurnState, Wire


class InboxItem(Wire):
    """One open request the caller may answer: the turn it parks and the request, with
    its binding (``answered_by``) and expiry."""

    session_id: str
    turn_id: str
    agent: str
    state: TurnState
    request: PendingInput


class InboxPage(Wire):
    """``GET /v1/inbox?state=open``: by session and admission; ``next`` is the
    ``after`` of the next page (null: the last)."""

    inputs: list[InboxItem]
    next: str | None = None
