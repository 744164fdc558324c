"""Experiments over HTTP (api/service/experiments.py says what an experiment is).

``POST /v1/experiments`` creates and starts one (201; a replay of the same request
200; another under the id 409), its id the ``Idempotency-Key`` (else a new one);
``GET /v1/experiments`` lists the tenant's newest first; ``GET …/{id}`` one with its
per-case results and figures; ``POST …/{id}/cancel`` stops it; ``GET
…/{a}/compare/{b}`` puts two side by side. A reader may read, not create or cancel;
another tenant's experiment is 404, as a missing one.
"""

from __future__ import annotations

import re
import uuid
from typing import Annotated

from fastapi import APIRouter, Path, Query, Request
from fastapi.responses import JSONResponse

from turnkeep.api import openapi as doc
from turnkeep.api.auth import principal_of
from turnkeep.api.errors import InvalidKey
from turnkeep.api.resources import services_of
from turnkeep.api.service import experiments
from turnkeep.api.service.experiments import ExperimentRequest
from turnkeep.api.service.requests import NO_NUL
from turnkeep.evaluation import DATASET_NAME, EXPERIMENT_ID, Comparison, Experiment, ExperimentList

router = APIRouter()

ExperimentId = Annotated[str, Path(pattern=EXPERIMENT_ID)]
_ID = re.compile(EXPERIMENT_ID)

_IDEMPOTENCY_KEY = {
    "parameters": [
        {
            "name": "Idempotency-Key",
            "in": "header",
            "required": False,
            "description": "The experiment's id (a new one when absent). The same request "
            "again: 200; another: 409",
            "schema": {"type": "string", "pattern": EXPERIMENT_ID},
        }
    ]
}


def _id(key: str | None) -> str:
    if key is None:
        return uuid.uuid4().hex
    if not _ID.fullmatch(key):
        raise InvalidKey("an experiment's Idempotency-Key must match [A-Za-z0-9_-]{1,64}")
    return key


@router.post(
    "/v1/experiments",
    status_code=201,
    openapi_extra=_IDEMPOTENCY_KEY,
    responses={
        201: doc.body(Experiment, "Created and started", headers=doc.LOCATION),
        200: doc.body(Experiment, "A replay: the experiment of that id", headers=doc.LOCATION),
        **doc.problems(400, 403, 404, 409),
    },
)
async def create_experiment(request: Request, body: ExperimentRequest) -> JSONResponse:
    """Run a dataset version against an agent version: each case a real turn in its own
    session, through the ordinary submit path, on the ordinary workers."""
    services, principal = services_of(request), principal_of(request)
    eid = _id(request.headers.get("idempotency-key"))
    made, created = await services.run(experiments.create, services, principal, eid, body)
    background = None
    if made["state"] == "running":
        background = services.after_answer(experiments.nudge, services, principal.tenant, eid)
    return JSONResponse(
        made,
        status_code=201 if created else 200,
        headers={"Location": f"/v1/experiments/{eid}"},
        background=background,
    )


@router.get(
    "/v1/experiments", responses={200: doc.body(ExperimentList, "The tenant's experiments")}
)
async def list_experiments(
    request: Request,
    dataset: Annotated[str | None, Query(pattern=DATASET_NAME)] = None,
    agent: Annotated[str | None, Query(min_length=1, max_length=128, pattern=NO_NUL)] = None,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
) -> JSONResponse:
    """Newest first, of one dataset or agent when named; each with its figures."""
    services, principal = services_of(request), principal_of(request)
    found = await services.run(
        experiments.listing, services, principal, dataset=dataset, agent=agent, limit=limit
    )
    return JSONResponse(found)


@router.get(
    "/v1/experiments/{eid}",
    responses={200: doc.body(Experiment, "The experiment and its cases"), **doc.problems(404)},
)
async def get_experiment(request: Request, eid: ExperimentId) -> JSONResponse:
    """Its state, its figures (pass rate, cost, tokens, latency, steps, failures by
    code), and each case's turn, assertions and judge."""
    services, principal = services_of(request), principal_of(request)
    found = await services.run(experiments.get, services, principal, eid)
    return JSONResponse(found.model_dump(mode="json"))


@router.post(
    "/v1/experiments/{eid}/cancel",
    responses={200: doc.body(Experiment, "Cancelled (or ended already)"), **doc.problems(403, 404)},
)
async def cancel_experiment(request: Request, eid: ExperimentId) -> JSONResponse:
    """No more cases are admitted and the running ones' turns are cancelled."""
    services, principal = services_of(request), principal_of(request)
    found = await services.run(experiments.cancel, services, principal, eid)
    return JSONResponse(found.model_dump(mode="json"))


@router.get(
    "/v1/experiments/{a}/compare/{b}",
    responses={200: doc.body(Comparison, "Side by side"), **doc.problems(404)},
)
async def compare_experiments(request: Request, a: ExperimentId, b: ExperimentId) -> JSONResponse:
    """``b`` against ``a``, case by case: fixed, regressed, the same; the assertions
    whose result changed; the judges' scores; the pass rate's and the cost's deltas."""
    services, principal = services_of(request), principal_of(request)
    found = await services.run(experiments.compare, services, principal, a, b)
    return JSONResponse(found.model_dump(mode="json"))
