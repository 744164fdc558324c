"""Agents and their versions over HTTP (api/service/versions.py, docs/deploy.md): the
declared agents, what each definition of one still runs and who serves it, and an
operator's upgrade of one turn or of every turn on a definition."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Request
from fastapi.responses import JSONResponse

from turnkeep.api import openapi as doc
from turnkeep.api.auth import principal_of
from turnkeep.api.resources import services_of
from turnkeep.api.service import feedback, versions
from turnkeep.api.service.requests import ID_REGEX, NO_NUL
from turnkeep.feedback import Feedback, FeedbackSummary
from turnkeep.models import AgentList, AgentVersions, TurnUpgrade, VersionUpgrade

router = APIRouter()

AgentName = Annotated[str, Path(min_length=1, max_length=128, pattern=NO_NUL)]
DefinitionHash = Annotated[str, Path(pattern="^[0-9a-f]{64}$")]
SessionId = Annotated[str, Path(pattern=ID_REGEX)]
TurnId = Annotated[str, Path(pattern=ID_REGEX)]


@router.get("/v1/agents", responses={200: doc.body(AgentList, "The declared agents")})
async def list_agents(request: Request) -> JSONResponse:
    """The agents the API declares, each with its versions (oldest first, the last is
    the latest) and definition hashes, and its default: what the caller's tenant's new
    turns get unless they name one (for a gated agent, the version it last promoted)."""
    services, principal = services_of(request), principal_of(request)
    return JSONResponse(await services.run(versions.agents, services, principal))


@router.get(
    "/v1/agents/{name}/versions",
    responses={200: doc.body(AgentVersions, "The agent's definitions"), **doc.problems(404)},
)
async def agent_versions(request: Request, name: AgentName) -> JSONResponse:
    """Per definition hash of the agent: the caller's tenant's active turns by state and
    the live workers serving it; an old build is drained once its hash has no turns."""
    services, principal = services_of(request), principal_of(request)
    return JSONResponse(await services.run(versions.versions, services, principal, name))


@router.post(
    "/v1/agents/{name}/versions/{definition_hash}/upgrade",
    status_code=202,
    responses={202: doc.body(VersionUpgrade, "Flagged"), **doc.problems(403)},
)
async def upgrade_version(
    request: Request, name: AgentName, definition_hash: DefinitionHash
) -> JSONResponse:
    """Move every active turn of the tenant on this definition to the agent's newest
    version at its next safe point, pinned or not (admin)."""
    services, principal = services_of(request), principal_of(request)
    done = await services.run(versions.upgrade_version, services, principal, name, definition_hash)
    return JSONResponse(done, status_code=202)


@router.post(
    "/v1/sessions/{sid}/turns/{tid}/upgrade",
    status_code=202,
    responses={202: doc.body(TurnUpgrade, "Flagged"), **doc.problems(403, 404, 409)},
)
async def upgrade_turn(request: Request, sid: SessionId, tid: TurnId) -> JSONResponse:
    """Move the turn to its agent's newest version at its next safe point, pinned or
    not (admin). 409 ``turn_not_active`` once it ended."""
    services, principal = services_of(request), principal_of(request)
    done = await services.run(versions.upgrade_turn, services, principal, sid, tid)
    return JSONResponse(done, status_code=202)


@router.post(
    "/v1/sessions/{sid}/turns/{tid}/feedback",
    status_code=201,
    responses={
        201: doc.body(Feedback, "Recorded"),
        200: doc.body(Feedback, "Its author's earlier feedback on that step, replaced"),
        **doc.problems(400, 403, 404),
    },
)
async def give_feedback(
    request: Request, sid: SessionId, tid: TurnId, body: feedback.FeedbackRequest
) -> JSONResponse:
    """Score the turn, or one of its committed steps: a thumb or a number on a declared
    scale, and an optional note kept as its hash. One per (turn, step, subject)."""
    services = services_of(request)
    given, created = await services.run(
        feedback.give, services, principal_of(request), sid, tid, body
    )
    return JSONResponse(feedback.feedback_json(given), status_code=201 if created else 200)


@router.get(
    "/v1/agents/{name}/feedback",
    responses={200: doc.body(FeedbackSummary, "Per version of the agent"), **doc.problems()},
)
async def feedback_summary(request: Request, name: AgentName) -> JSONResponse:
    """The tenant's feedback on the agent, per version: how many, thumbs up and down,
    and the mean score over each one's scale (0 to 1)."""
    services, principal = services_of(request), principal_of(request)
    return JSONResponse(await services.run(feedback.summary, services, principal, name))
