"""What ``/openapi.json`` says beyond what FastAPI infers from the routes.

Routes declare what is theirs: their success bodies (``body``: a wire model, which
the document states closed, api/http/bodies.py) and the problems only they answer
(``problems(404, 409)``).
``install`` adds what the app's middleware and exception handlers do for every
route, so a route added later is documented as it behaves without asking:

- every error is an RFC 9457 problem (api/problems.py): each 4xx and 5xx response of
  every operation is ``application/problem+json`` with the ``Problem`` schema, 422
  included (FastAPI's own ``HTTPValidationError`` body is never answered);
- ``Authenticate`` (api/auth.py) guards every path but the public ones: those
  operations require the ``bearer`` scheme and may answer 401 (no or a wrong token)
  and 503 (no token configured; the store or Redis unavailable);
- ``BodyLimit`` (api/limits.py): an operation with a request body may answer 413;
- an operation on a session (its path names ``{sid}``) or a workflow node's may answer
  410 ``session_deleted`` (docs/erasure.md), but the session's DELETE itself.

Not in the document, because they are not FastAPI routes and speak protocols with
their own discovery: ``/mcp`` (MCP over Streamable HTTP, api/mcp_server.py; its tools
are listed by ``tools/list``) and the A2A JSON-RPC endpoints ``/a2a`` and
``/a2a/{agent}`` with the public agent cards (api/a2a/), which describe them.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from fastapi import FastAPI
from pydantic import BaseModel

from turnkeep.api.http import bodies
from turnkeep.api.problems import MEDIA_TYPE
from turnkeep.problems import Problem

REF = "#/components/schemas/{model}"
PROBLEM_REF = {"$ref": "#/components/schemas/Problem"}
BEARER = "bearer"
STREAM_TOKEN = "streamToken"

#: what each problem status means, with the codes it carries
STATUSES: dict[int, str] = {
    400: "Bad request: `invalid_json`, `invalid_idempotency_key`, `invalid_cursor`, "
    "`webhook_not_configured`",
    401: "No valid credentials: `unauthorized`",
    403: "The principal may not do this: `forbidden_role` (a reader writing), "
    "`input_forbidden` (not one who may answer)",
    404: "`not_found`: no such resource for this tenant; another tenant's resource "
    "answers exactly the same",
    409: "Conflict: `idempotency_conflict`, `session_agent_conflict`, "
    "`session_metadata_conflict`, `session_busy`, `turn_not_active`, `input_not_open`, "
    "`cursor_ahead`, `binding_taken`, `promotion_refused` (`failed`: each failed check), "
    "`promotion_conflict`, `dataset_busy`",
    410: "Gone: `session_deleted` (the session was deleted or expired: `deleted_at`, "
    "`erased_at`), `resync_required` (a cursor before the retention cut), `input_expired`",
    413: "`payload_too_large`: the body is above `TURNKEEP_MAX_BODY_BYTES`",
    422: "Invalid request: `validation_error` (`errors` says where), `unknown_agent`, "
    "`agent_not_gated`, `callback_not_allowed`",
    429: "`quota_exceeded`: a quota is reached (`quota`, `limit`); retry after `Retry-After`",
    503: "Unavailable: `unavailable` (the store or Redis), `auth_not_configured`, "
    "`stream_tokens_not_configured`",
}

_HEADERS: dict[int, dict[str, Any]] = {
    401: {
        "WWW-Authenticate": {
            "description": "`Bearer` when a bearer token was missing or wrong",
            "schema": {"type": "string"},
        }
    },
    429: {
        "Retry-After": {
            "description": "seconds to wait",
            "required": True,
            "schema": {"type": "string", "pattern": "^[0-9]+$"},
        }
    },
    503: {
        "Retry-After": {
            "description": "seconds to wait, when the store or Redis is unavailable",
            "schema": {"type": "string", "pattern": "^[0-9]+$"},
        }
    },
}

#: the ``Location`` of an admitted turn or node
LOCATION = {
    "Location": {
        "description": "where the turn (or workflow node) is read",
        "required": True,
        "schema": {"type": "string"},
    }
}

#: one frame of a session's event stream, as ``itemSchema`` (what FastAPI emits for SSE)
EVENT_STREAM: dict[str, Any] = {
    "itemSchema": {
        "type": "object",
        "required": ["event", "data"],
        "properties": {
            "event": {
                "type": "string",
                "description": "a committed event's type (framed with its seq as `id`); "
                "`model.delta` (speculative text, no id of its own); `stream.resume`, "
                "`stream.resync_required` or `stream.session_deleted` (the final frame "
                "of a stream that ends)",
            },
            "id": {
                "type": "string",
                "pattern": "^[0-9]+$",
                "description": "the seq of the last committed event: resume from it "
                "with `Last-Event-ID`",
            },
            "data": {
                "type": "string",
                "contentMediaType": "application/json",
                "contentSchema": {
                    "oneOf": [
                        {"$ref": REF.format(model=name)}
                        for name in ("Event", "Delta", "StreamResume", "StreamResyncRequired")
                    ]
                },
                "description": "the event as `Event`; a `model.delta` as `Delta`; the final "
                "frames as `StreamResume` and `StreamResyncRequired`",
            },
            "retry": {"type": "integer", "minimum": 0},
        },
    }
}


def body(
    model: type[BaseModel], description: str, *, headers: dict[str, Any] | None = None
) -> dict[str, Any]:
    """A success response answering ``model`` (a wire model) as JSON: the document
    states it closed."""
    response: dict[str, Any] = {"model": bodies.closed(model), "description": description}
    if headers:
        response["headers"] = headers
    return response


def problems(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """The problem responses a route answers beyond those ``install`` adds (401 and 503
    on a guarded route, 413 with a body) and FastAPI adds (422 with any parameter); the
    content of each is set by ``install``."""
    return {status: {"description": STATUSES[status]} for status in statuses}


def _schemas() -> dict[str, Any]:
    """``Problem`` and the data of the event stream's frames that no route answers as
    JSON (``bodies.STREAM_FRAMES``), and the models they refer to, as component schemas."""
    found: dict[str, Any] = {}
    named: tuple[type[BaseModel], ...] = (bodies.closed(Problem), *bodies.STREAM_FRAMES)
    for model in named:
        schema = model.model_json_schema(ref_template=REF)
        found.update(schema.pop("$defs", {}))
        found[model.__name__] = schema
    return found


def _complete_operation(path: str, op: dict[str, Any], public: Collection[str]) -> None:
    responses: dict[str, Any] = op.setdefault("responses", {})
    if path in public:
        op["security"] = []
    else:
        op.setdefault("security", [{BEARER: []}])
        responses.setdefault("401", {})
        responses.setdefault("503", {})
    if "requestBody" in op:
        responses.setdefault("413", {})
    for key, response in responses.items():
        if key[:1] not in ("4", "5"):
            continue
        code = int(key)
        if code in STATUSES and response.get("description") in (None, "Validation Error"):
            response["description"] = STATUSES[code]
        response["content"] = {MEDIA_TYPE: {"schema": PROBLEM_REF}}
        if code in _HEADERS:
            response["headers"] = {**_HEADERS[code], **response.get("headers", {})}


def complete(schema: dict[str, Any], public: Collection[str]) -> dict[str, Any]:
    """``schema`` (FastAPI's document) with what every route does, in place."""
    components = schema.setdefault("components", {})
    schemas = components.setdefault("schemas", {})
    for name in ("HTTPValidationError", "ValidationError"):
        schemas.pop(name, None)  # never answered: every 422 is a problem
    schemas.update(_schemas())
    components["securitySchemes"] = {
        BEARER: {
            "type": "http",
            "scheme": "bearer",
            "description": "a token of `TURNKEEP_TOKENS`; its tenant scopes everything",
        },
        STREAM_TOKEN: {
            "type": "apiKey",
            "in": "query",
            "name": "stream_token",
            "description": "a stream token (`POST /v1/sessions/{sid}/stream-tokens`): "
            "GET of that session's events only",
        },
    }
    for path, operations in schema.get("paths", {}).items():
        for method, op in operations.items():
            if _on_a_session(path) and (method, path) != ("delete", "/v1/sessions/{sid}"):
                op.setdefault("responses", {}).setdefault("410", {})
            _complete_operation(path, op, public)
    return schema


def _on_a_session(path: str) -> bool:
    """Whether the operation reaches one session, which may have been deleted."""
    return "{sid}" in path or path.startswith("/v1/workflows/")


def install(app: FastAPI, *, public: Collection[str]) -> None:
    """Serve ``complete`` of FastAPI's document, built once, on first request."""
    infer = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = complete(infer(), public)
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
