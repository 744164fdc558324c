"""Forks over HTTP: ``POST /v1/sessions/{sid}/fork`` (api/service/forks.py, Store.forks.fork).

A fork is a new session of the same tenant and agent whose journal is the source's
retained events up to ``at_seq``, with the same seqs and turn ids, and whose turns
are copies of the source's turns admitted by then: each settled by ``at_seq`` as it
is, each still active at ``at_seq`` cancelled with the error ``fork_cut`` (its copy
never runs, and its journal in the fork simply ends). The next turn admitted to the
fork takes seq ``at_seq + 1``. The source is only read.

The new session's id is the body's ``session_id``, else the ``Idempotency-Key``
header, else a new one (both given: they must be equal). A fork is idempotent by that
id: the same source and seq again is answered with the fork as it stands (200);
another request for the id is 409 ``idempotency_conflict`` (another fork) or
``session_exists`` (a session that is no fork). The whole fork is one transaction,
so a crash leaves nothing of it; a retry then forks anew.

A fork of a project's session is in the same project (api/service/projects.py): its owner's
alone, as the source is; anyone else is answered as for a missing source.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path, Request
from fastapi.responses import JSONResponse

from turnkeep.api import openapi as doc
from turnkeep.api.auth import principal_of
from turnkeep.api.resources import services_of
from turnkeep.api.service.forks import ForkRequest, fork
from turnkeep.api.service.requests import ID_REGEX
from turnkeep.models import Fork
from turnkeep.store.records import Forked

router = APIRouter()

SessionId = Annotated[str, Path(pattern=ID_REGEX)]


_IDEMPOTENCY_KEY = {
    "parameters": [
        {
            "name": "Idempotency-Key",
            "in": "header",
            "required": False,
            "description": "The new session's id when the body names none; a new one is "
            "generated when both are absent. The same fork again: 200; another: 409",
            "schema": {"type": "string", "pattern": ID_REGEX},
        }
    ]
}
_LOCATION = {
    "Location": {
        "description": "where the new session is read",
        "required": True,
        "schema": {"type": "string"},
    }
}


def fork_json(forked: Forked) -> dict[str, Any]:
    session = forked.session
    return {
        "session_id": session.session_id,
        "agent": session.agent_name,
        "head_seq": session.head_seq,
        "earliest_seq": session.earliest_seq,
        "forked_from": {"session_id": forked.source_id, "seq": forked.at_seq},
        "cut_turns": list(forked.cut),
        "created_at": session.created_at.isoformat(),
    }


@router.post(
    "/v1/sessions/{sid}/fork",
    status_code=201,
    openapi_extra=_IDEMPOTENCY_KEY,
    responses={
        201: doc.body(Fork, "Forked", headers=_LOCATION),
        200: doc.body(Fork, "A replay: the fork of that id, as it stands", headers=_LOCATION),
        **doc.problems(400, 403, 404),
        409: {
            "description": "Conflict: `fork_point_ahead` (`at_seq` beyond the head), "
            "`idempotency_conflict` (the id is another fork), `session_exists`"
        },
        410: {"description": "`fork_point_pruned`: `at_seq` is before the retention cut"},
    },
)
async def fork_session(request: Request, sid: SessionId, body: ForkRequest) -> JSONResponse:
    """Fork the session at a seq into a new session of the same agent."""
    services = services_of(request)
    key = request.headers.get("idempotency-key")
    forked = await services.run(fork, services, principal_of(request), sid, key, body)
    return JSONResponse(
        fork_json(forked),
        status_code=201 if forked.created else 200,
        headers={"Location": f"/v1/sessions/{forked.session.session_id}"},
    )
