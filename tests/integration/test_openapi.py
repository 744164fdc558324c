"""The OpenAPI document tells the truth: schemathesis against the live API.

Every operation of the document is called with generated requests, ``EXAMPLES`` per
operation and run, twice: with tenant a's token (no server error; every status code,
media type, body and header as documented) and with none (every operation but the
public ones answers 401 ``unauthorized``, as documented). Generated ids and agent
names name nothing, so about half of the ids and most bodies are aimed at what exists
(a session with a turn, a workflow node, the ``demo`` agent), and the events route is
asked for JSON, SSE or either; an event stream is read up to its first event
(``max-stream-events``). ``test_success_was_seen_and_validated`` checks the aim: every
operation answered a documented 2xx at least once.

Not covered: a 200 from ``POST …/inputs/{rid}`` needs a turn waiting for an answer,
hence a worker (tests/integration/test_tenancy.py and test_inputs.py answer one).
Not in the document (api/openapi.py says why): ``/mcp`` and the A2A JSON-RPC
endpoints and agent cards, and the docs pages; ``OUTSIDE`` checks who may call them.

The schema is loaded from ``create_app()`` at import (``test_the_served_document_is
_the_tested_one`` checks the live server serves the same) and every call goes to the
live URL: schemathesis's ``pytest.from_fixture`` (schemathesis 4.32) sets
``Item._nodeid``, which pytest 9.2 no longer has.
"""

from __future__ import annotations

import json
import uuid
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import pytest
import schemathesis
from hypothesis import strategies as st
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from tests.integration.api_agents import AGENTS as API_AGENTS
from tests.integration.api_server import Api, admit, serve_api
from turnkeep.api.app import create_app

#: generated requests per operation and run (schemathesis's fuzzing phase)
EXAMPLES = 25
#: the documented operations anyone may call (the docs pages and agent cards are
#: public too, and not in the document)
PUBLIC = {("GET", "/healthz"), ("GET", "/readyz")}
DEMO = API_AGENTS[0]
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
    response_headers_conformance,
]
ACCEPT = ["application/json", "text/event-stream", "*/*"]
#: three bodies in four are made admissible: an agent that exists (a generated name
#: is unknown: 422), no callback_url and no output_schema. Aimed is the simplest draw:
#: hypothesis favours simple values (an integers(0, 3) drew 0 far more often than one
#: time in four), and an operation must see a 2xx in its EXAMPLES
AIM = st.sampled_from((True, True, True, False))
#: half of the ids name what exists; aimed is the simplest draw here too
HALF = st.sampled_from((True, False))
CONFIG = schemathesis.Config.from_dict(
    {
        # credentials are the test's to set: none generated
        "generation": {
            "max-examples": EXAMPLES,
            "database": "none",
            "with-security-parameters": False,
        },
        "max-stream-events": 1,
        "request-timeout": 5,
    }
)
#: after the parallel part of make test: under pytest-xdist, schemathesis folds every
#: operation into one item, which test_success_was_seen_and_validated cannot read
pytestmark = pytest.mark.serial
schema = schemathesis.openapi.from_dict(create_app().openapi(), config=CONFIG)


@schemathesis.serializer("application/x-ndjson")
def _json_lines(ctx: schemathesis.SerializationContext, value: object) -> bytes:
    """A dataset version's cases as JSON Lines (api/http/datasets.py), one a line."""
    items = value if isinstance(value, list) else [value]
    return "\n".join(json.dumps(item) for item in items).encode()


#: (method, path) -> the statuses the authenticated run saw
SEEN: dict[tuple[str, str], set[int]] = defaultdict(set)


@dataclass(frozen=True)
class Known:
    """What exists in tenant a, for generated requests to hit."""

    sid: str
    tid: str
    run_id: str
    node_id: str
    aid: str
    pid: str
    schedule_id: str
    #: tenant a's admin token (upgrades, bindings and promotions are an admin's)
    admin: str
    #: a dataset with one case, and an experiment on it (no worker runs it here)
    dataset: str = "openapi-dataset"
    eid: str = "openapi-experiment"


@pytest.fixture(scope="module")
def api(service_env: dict[str, str]) -> Iterator[Api]:
    # short long polls; a stream token secret, so a ?stream_token= is checked (not 503);
    # no worker runs the known session's turns, and the aimed admissions and cancels
    # (each admits one) queue there past the default bound of 100 (429 quota_exceeded)
    with serve_api(
        service_env,
        max_wait=1.0,
        stream_token_secret="openapi-test",
        max_queued_per_session=10_000,
    ) as handle:
        yield handle


@pytest.fixture(scope="module")
def owner(api: Api) -> httpx.Client:
    return api.client("a")


@pytest.fixture(scope="module")
def known(owner: httpx.Client, api: Api) -> Known:
    r = admit(owner, "openapi-known", "openapi-known-turn", agent="demo")
    assert r.status_code == 202, r.text
    body = {"agent": "demo", "input": [{"role": "user", "content": "node"}]}
    r = owner.post("/v1/workflows/openapi-run/nodes/openapi-node/turns", json=body)
    assert r.status_code == 202, r.text
    aid = _attach(owner, "openapi-known", "openapi-known-attachment")
    r = owner.post("/v1/projects", json={}, headers={"Idempotency-Key": "openapi-project"})
    assert r.status_code in (200, 201), r.text
    schedule = _schedule(owner, "openapi-schedule")
    r = owner.post(f"/v1/datasets/{DATASET}/versions", json={"cases": [CASE]})
    assert r.status_code in (200, 201), r.text
    r = owner.post(
        "/v1/experiments",
        json={"dataset": DATASET, "agent": "demo"},
        headers={"Idempotency-Key": "openapi-experiment"},
    )
    assert r.status_code in (200, 201), r.text
    return Known(
        "openapi-known",
        "openapi-known-turn",
        "openapi-run",
        "openapi-node",
        aid,
        "openapi-project",
        schedule,
        api.more["a-admin"],
    )


#: the known dataset and its one case (api/http/datasets.py)
DATASET = "openapi-dataset"
CASE = {
    "input": {"messages": [{"role": "user", "content": "hi"}]},
    "assertions": [{"kind": "outcome", "state": "completed"}],
}


def _schedule(owner: httpx.Client, schedule_id: str | None = None) -> str:
    """An hourly schedule of the demo agent (api/http/schedules.py)."""
    body = {"agent": "demo", "input": [{"role": "user", "content": "hi"}], "every_seconds": 3600}
    headers = {"Idempotency-Key": schedule_id} if schedule_id else {}
    r = owner.post("/v1/schedules", json=body, headers=headers)
    assert r.status_code in (200, 201), r.text
    return str(r.json()["schedule_id"])


def _attach(owner: httpx.Client, sid: str, aid: str | None = None) -> str:
    """A ready attachment of the session (api/http/attachments.py)."""
    body = {"filename": "a.txt", "content_type": "text/plain", "data_base64": "aGk="}
    headers = {"Idempotency-Key": aid} if aid else {}
    r = owner.post(f"/v1/sessions/{sid}/attachments", json=body, headers=headers)
    assert r.status_code in (200, 201), r.text
    return str(r.json()["attachment_id"])


def _aim(case: schemathesis.Case, data: st.DataObject, known: Known, owner: httpx.Client) -> None:
    """Aim half of the ids and most bodies at what exists; pick the events route's
    Accept. A cancellation aimed at the known session gets a turn of its own (the known
    turn is cancelled early, by a cancel or an interrupting admission), a workflow
    node's admission a node of its own."""
    headers = case.headers if case.headers is not None else {}
    case.headers = headers
    path = case.operation.path
    if path.endswith("/events"):
        headers["Accept"] = data.draw(st.sampled_from(ACCEPT), label="Accept")
    if (
        isinstance(case.body, dict)
        and "agent" in case.body
        and data.draw(AIM, label="aim the body")
    ):
        case.body["agent"] = "demo"
        case.body.pop("callback_url", None)  # no webhook secret here: 400
        case.body.pop("output_schema", None)  # mostly no JSON Schema when generated: 422
        case.body.pop("project", None)  # a generated project id names none: 404
        case.body.pop("agent_version", None)  # a generated version names none: 422
        # a generated TTL of seconds would expire the known session, which every other
        # operation reads: 410 from then on (docs/erasure.md)
        case.body.pop("expires_after", None)
    if (
        path.startswith("/v1/projects")
        and isinstance(case.body, dict)
        and data.draw(AIM, label="aim the project body")
    ):
        # generated overrides mostly name agents that are not declared: 422
        case.body["overrides"] = {}
        case.body.pop("project_id", None)  # mostly not the generated Idempotency-Key: 422
    if path.endswith("/rerun") and data.draw(AIM, label="rerun"):
        # a generated step is mostly past the known turn's last (422); a generated
        # replacement mostly does not fit that step
        case.body = {"from_step": 1}
    if path.endswith("/feedback") and case.method.upper() == "POST" and data.draw(AIM, label="fb"):
        # a generated body mostly gives both a thumb and a score, or neither (422)
        case.body = {"thumbs": "up"}
    if path == "/v1/schedules" and isinstance(case.body, dict) and data.draw(AIM, label="aim"):
        # a generated cron or time zone is mostly none (422), and both or neither given
        for name in ("cron", "schedule_id", "timezone", "session_id"):
            case.body.pop(name, None)
        case.body["every_seconds"] = 3600
    if (
        path == "/v1/bridges/bindings"
        and isinstance(case.body, dict)
        and data.draw(AIM, label="aim the binding")
    ):
        # a Slack binding names no reply URL; a generated sender is mostly bound already,
        # a generated workspace mostly not tenant a's (404)
        case.body.update(bridge="slack", workspace="T1", user=f"U{uuid.uuid4().hex[:10]}")
        case.body.pop("reply_url", None)
    _aim_evaluation(case, data, known)
    if path == "/v1/sessions/{sid}" and case.method.upper() == "DELETE":
        # the known session is read by every other operation: a deletion gets its own
        # (or a generated id, naming none: 404)
        if data.draw(HALF, label="aim the deletion"):
            fresh = f"openapi-gone-{uuid.uuid4().hex[:8]}"
            assert admit(owner, fresh, agent="demo").status_code == 202
            case.path_parameters["sid"] = fresh
        return
    if not case.path_parameters or not data.draw(HALF, label="aim the ids"):
        return
    ids = {
        "sid": known.sid,
        "tid": known.tid,
        "run_id": known.run_id,
        "node_id": known.node_id,
        "aid": known.aid,
        "pid": known.pid,
        "schedule_id": known.schedule_id,
        "name": "demo",
        "definition_hash": DEMO.definition_hash,
    }
    for name in case.path_parameters:
        if name in ids:
            case.path_parameters[name] = ids[name]
    if path.endswith("/cancel") or path.endswith("/turns/{tid}/upgrade"):
        r = admit(owner, known.sid, agent="demo")
        assert r.status_code == 202, r.text
        case.path_parameters["tid"] = r.json()["turn_id"]
    if path == "/v1/schedules/{schedule_id}" and case.method.upper() == "DELETE":
        # the known schedule is read by other operations: a deletion gets its own
        case.path_parameters["schedule_id"] = _schedule(owner)
    if path.endswith("/attachments/{aid}") and case.method.upper() == "DELETE":
        # the known attachment is read by other operations: a deletion gets its own
        case.path_parameters["aid"] = _attach(owner, known.sid)
    if path.endswith("/fork") and isinstance(case.body, dict):
        # a generated seq is mostly beyond the known session's head (409); a generated
        # new session id mostly differs from the generated Idempotency-Key (422)
        case.body["at_seq"] = 1
        case.body.pop("session_id", None)
    if path.endswith("/bindings/{binding_id}"):
        # a revocation gets a live binding of its own (tenant a's admin makes it)
        body = {"bridge": "slack", "workspace": "T1", "channel": "C1", "agent": "demo"}
        r = owner.post(
            "/v1/bridges/bindings",
            json={**body, "user": f"U{uuid.uuid4().hex[:10]}"},
            headers={"Authorization": f"Bearer {known.admin}"},
        )
        assert r.status_code == 201, r.text
        case.path_parameters["binding_id"] = r.json()["binding_id"]
    if path.endswith("/nodes/{node_id}/turns"):
        # the known node again is a replay (200) or a conflict (409): a new one instead
        case.path_parameters["node_id"] = f"node-{uuid.uuid4().hex[:8]}"
    if path.endswith("/events"):
        # from the start of the journal: a generated cursor is mostly beyond its head
        (case.query or {}).pop("after", None)
        headers.pop("Last-Event-ID", None)
    if path.startswith("/v1/datasets/") or path.startswith("/v1/experiments/"):
        # the known dataset's version, the known experiment (twice, for a comparison)
        for name, value in (("name", DATASET), ("version", 1), ("eid", known.eid),
                            ("a", known.eid), ("b", known.eid)):  # fmt: skip
            if name in case.path_parameters:
                case.path_parameters[name] = value
    if path.endswith("/promote"):
        # the gated agent of tests/integration/api_agents.py: its policy checks nothing
        case.path_parameters.update(name="gated", version="2")


def _aim_evaluation(case: schemathesis.Case, data: st.DataObject, known: Known) -> None:
    """Bodies of the evaluation plane (docs/evaluation.md) that name what exists: a
    generated case mostly holds a generated regular expression or schema (422), a
    generated turn or dataset names none (404)."""
    path, body = case.operation.path, case.body
    if not isinstance(body, dict) or not data.draw(AIM, label="aim the evaluation body"):
        return
    if path.endswith("/versions") and path.startswith("/v1/datasets/"):
        case.body = {"cases": [CASE]}
    elif path.endswith("/cases"):
        case.body = {"turns": [{"session_id": known.sid, "turn_id": known.tid}], "base": 0}
    elif path == "/v1/experiments":
        case.body = {"dataset": DATASET, "agent": "demo", "concurrency": 1}
        case.headers.pop("Idempotency-Key", None)  # mostly another request: 409


@schema.parametrize()
@schema.given(data=st.data())
def test_api_answers_as_documented(
    case: schemathesis.Case,
    data: st.DataObject,
    api: Api,
    known: Known,
    owner: httpx.Client,
) -> None:
    _aim(case, data, known, owner)
    # an upgrade, a promotion, a binding and a tenant's limits are an operator's: tenant
    # a's admin (any other role is 403 for the writes)
    admin = (
        case.operation.path.endswith(("/upgrade", "/promote"))
        or "/bridges/" in case.operation.path
        or case.operation.path == "/v1/limits"
    )
    case.headers["Authorization"] = f"Bearer {api.more['a-admin'] if admin else api.token_a}"
    response = case.call_and_validate(base_url=api.url, checks=CHECKS)
    SEEN[(case.method.upper(), case.operation.path)].add(response.status_code)


@schema.parametrize()
@schema.given(data=st.data())
def test_no_token_no_access(
    case: schemathesis.Case,
    data: st.DataObject,
    api: Api,
    known: Known,
    owner: httpx.Client,
) -> None:
    _aim(case, data, known, owner)
    case.headers.pop("Authorization", None)
    response = case.call_and_validate(base_url=api.url, checks=CHECKS)
    if (case.method.upper(), case.operation.path) in PUBLIC:
        return
    assert response.status_code == 401, (case.method, case.formatted_path, response.text)
    assert response.headers["content-type"] == ["application/problem+json"]
    assert response.json()["code"] == "unauthorized"


def test_success_was_seen_and_validated() -> None:
    """Guards the aim: an operation never answered 2xx had no success body checked.
    Reads what test_api_answers_as_documented saw: it runs first, in this module."""
    assert SEEN, "test_api_answers_as_documented ran no case: run the whole module"
    document = create_app().openapi()
    operations = {(m.upper(), path) for path, ops in document["paths"].items() for m in ops}
    # an answer needs a turn parked on a request: a worker's (tests/integration/test_inputs.py,
    # test_approvals_together.py)
    needs_a_worker = {
        ("POST", "/v1/sessions/{sid}/turns/{tid}/inputs/{rid}"),
        ("POST", "/v1/sessions/{sid}/turns/{tid}/inputs"),
    }
    never = sorted(
        op for op in operations - needs_a_worker if not any(200 <= s < 300 for s in SEEN[op])
    )
    assert not never, never


def test_a_nul_is_refused_not_a_server_error(owner: httpx.Client, known: Known) -> None:
    """Found by the run above: a U+0000 in a message or an output schema reached
    Postgres, which stores it in neither text nor jsonb (500). Now 422."""
    nul_message = admit(owner, known.sid, text="a\u0000b", agent="demo")
    nul_schema = admit(owner, known.sid, agent="demo", output_schema={"description": "\x00"})
    for r in (nul_message, nul_schema):
        assert r.status_code == 422, r.text
        assert r.json()["code"] == "validation_error"
        assert "\x00" not in r.text and "\\u0000" not in r.text
    assert nul_message.json()["errors"][0]["loc"] == ["body", "input", "0", "content"]
    assert nul_schema.json()["errors"][0]["loc"] == ["body", "output_schema"]


#: what is not in the document: the docs and the agent cards are public, the
#: protocol surfaces are not
OUTSIDE = [
    ("GET", "/openapi.json", 200),
    ("GET", "/docs", 200),
    ("GET", "/redoc", 200),
    ("GET", "/.well-known/agent-card.json", 200),
    ("GET", "/a2a/.well-known/agent-card.json", 200),
    ("GET", "/a2a/demo/.well-known/agent-card.json", 200),
    ("POST", "/mcp", 401),
    ("GET", "/mcp", 401),
    ("DELETE", "/mcp", 401),
    ("POST", "/a2a", 401),
    ("POST", "/a2a/demo", 401),
    # the chat bridges' inbound routes: no bearer token, the provider's signature (none
    # configured here: 503)
    ("POST", "/bridges/slack/events", 503),
    ("POST", "/bridges/slack/interactions", 503),
    ("POST", "/bridges/generic/messages", 503),
]


@pytest.mark.parametrize(("method", "path", "status"), OUTSIDE)
def test_outside_the_document_only_docs_and_cards_are_public(
    api: Api, method: str, path: str, status: int
) -> None:
    with httpx.Client(base_url=api.url, timeout=10) as anyone:
        r = anyone.request(method, path, json={} if method == "POST" else None)
    assert r.status_code == status, r.text
    if status == 401:
        assert r.json()["code"] == "unauthorized"
    if status == 503:
        assert r.json()["code"] == "bridge_not_configured"


def test_the_served_document_is_the_tested_one(api: Api) -> None:
    with api.client(None) as anyone:
        served = anyone.get("/openapi.json")
    assert served.status_code == 200
    assert served.json() == create_app().openapi()


def test_the_document_says_who_may_call() -> None:
    """Public operations need no credentials; every other one needs the bearer token
    (the events route also takes a stream token) and documents 401 as a problem."""
    document = create_app().openapi()
    assert set(document["components"]["securitySchemes"]) == {"bearer", "streamToken"}
    for path, operations in document["paths"].items():
        for method, op in operations.items():
            if (method.upper(), path) in PUBLIC:
                assert op["security"] == [], path
                continue
            assert {"bearer": []} in op["security"], path
            problem = op["responses"]["401"]["content"]["application/problem+json"]
            assert problem["schema"] == {"$ref": "#/components/schemas/Problem"}, path
    events = document["paths"]["/v1/sessions/{sid}/events"]["get"]
    assert events["security"] == [{"bearer": []}, {"streamToken": []}]
    assert "stream_token" in {p["name"] for p in events["parameters"]}
    assert set(events["responses"]["200"]["content"]) == {"application/json", "text/event-stream"}
    # every error answer is a problem; FastAPI's own validation body is never answered
    for operations in document["paths"].values():
        for op in operations.values():
            for status, response in op["responses"].items():
                if status >= "400":
                    assert set(response["content"]) == {"application/problem+json"}
    assert "HTTPValidationError" not in document["components"]["schemas"]
