"""The inbox: every open request the caller may answer, across the tenant's sessions
(``GET /v1/inbox?state=open``), with its binding and expiry. A request only the
runtime answers (a timer, a delegation) is no one's to answer and is left out; so is
one bound to another subject or a higher role, and a session of another owner's
project. Paged by session and admission: ``next`` is ``<ordinal>.<session id>``."""

from __future__ import annotations

from typing import Any

from turnkeep.api.auth import Principal
from turnkeep.api.errors import RequestInvalid
from turnkeep.api.resources import ApiResources
from turnkeep.api.service.wire import pending_json
from turnkeep.runtime import inputs
from turnkeep.runtime.numerals import ascii_int
from turnkeep.runtime.pending import TurnWait


def cursor(after: str | None) -> tuple[str, int]:
    if not after:
        return "", 0
    ordinal, _, sid = after.partition(".")
    number = ascii_int(ordinal)
    if number is None or not sid:
        raise RequestInvalid("query.after", "the next of a previous page")
    return sid, number


def inbox(
    services: ApiResources, principal: Principal, *, after: str | None, limit: int
) -> dict[str, Any]:
    rows = services.store.reads.open_inputs(
        principal.tenant, subject=principal.subject, after=cursor(after), limit=limit
    )
    items = []
    for r in rows:
        wait = TurnWait.from_json(r["pending_input"])
        for request in wait.open_requests():
            bound = request.answered_by or {"subject": r["submitted_by"]}
            if not inputs.may_answer(bound, subject=principal.subject, role=principal.role):
                continue
            items.append(
                {
                    "session_id": r["session_id"],
                    "turn_id": r["turn_id"],
                    "agent": r["agent_name"],
                    "state": r["state"],
                    "request": pending_json(request),
                }
            )
    last = rows[-1] if len(rows) == limit else None
    nxt = None if last is None else f"{last['ordinal']}.{last['session_id']}"
    return {"inputs": items, "next": nxt}
