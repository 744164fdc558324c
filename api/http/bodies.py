"""The JSON bodies the API answers, as the OpenAPI document states them (and only that).

The shapes are defined once, in the wire modules (turnkeep/models.py and its siblings:
open models, which the client parses answers with and the service builds them with).
The document's view of one is ``closed(model)``: the model with no property besides
its own, its nested models closed too, derived here and never restated, so the
document says exactly what a route answers. Routes name the wire model
(``doc.body(models.Turn, …)``); api/openapi.py closes it. Besides, the few bodies only
HTTP answers: a workflow node, health and readiness, the stream's final frames.
Free-form parts (a turn's result and error, an event's data) stay open objects.
"""

from __future__ import annotations

import functools
import operator
import types
from datetime import datetime
from typing import Annotated, Any, Literal, TypeVar, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, create_model

from turnkeep import models
from turnkeep.problems import Checks
from turnkeep.runtime.states import EventType, TurnState

M = TypeVar("M", bound=BaseModel)


class _Closed(BaseModel):
    model_config = ConfigDict(extra="forbid")


#: wire models the document leaves open, and why
OPEN: dict[type[BaseModel], str] = {
    models.Message: "a message carries its role's fields (content, a tool call's or result's)",
    models.PendingInput: "open in the document since its first version (closing it changes "
    "the TypeScript types); the service shows only its declared fields (api/service/wire.py)",
}

#: fields the document states narrower than the client reads them, and why
NARROWED: dict[type[BaseModel], dict[str, Any]] = {
    # the persisted names (runtime/states.py), which a client-only install lacks: the
    # document lists them, so a typed client (clients/typescript) knows each one
    models.Event: {"type": EventType},
}


@functools.cache
def closed(model: type[M]) -> type[M]:
    """``model`` as the document states it: the same name, docstring and fields, no
    other property (``additionalProperties: false``), each nested model closed in turn
    (but those in ``OPEN``). One class per model, so the document names it once."""
    if model in OPEN:
        return model
    narrowed = NARROWED.get(model, {})
    fields: dict[str, Any] = {}
    for name, field in model.model_fields.items():
        annotation = narrowed.get(name, _closed_in(field.annotation))
        if annotation is not field.annotation:
            fields[name] = (annotation, field)
    if not fields and model.model_config.get("extra") == "forbid":
        return model  # closed already (a body only HTTP answers)
    made = create_model(
        model.__name__,
        __base__=(model, _Closed),
        __module__=__name__,
        __doc__=model.__doc__,
        **fields,
    )
    return made  # type: ignore[return-value]


def _closed_in(annotation: Any) -> Any:
    """``annotation`` with every model in it closed (``X | None``, ``list[X]``, …); the
    same object when there is none."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return closed(annotation)
    args = get_args(annotation)
    if not args:
        return annotation
    origin = get_origin(annotation)
    if origin is Annotated:
        inner = _closed_in(args[0])
        return annotation if inner is args[0] else Annotated[(inner, *annotation.__metadata__)]
    if origin is Literal:
        return annotation
    inner_args = tuple(_closed_in(a) for a in args)
    if all(a is b for a, b in zip(inner_args, args, strict=True)):
        return annotation
    if origin in (Union, types.UnionType):
        return functools.reduce(operator.or_, inner_args)
    return origin[inner_args if len(inner_args) > 1 else inner_args[0]]


class Webhook(_Closed):
    """The completion webhook of a workflow node and its delivery."""

    url: str
    delivery_id: str
    status: Literal["pending", "delivered"]
    attempts: int
    delivered_at: datetime | None
    next_attempt_at: datetime | None
    last_status: int | None
    last_error: str | None


class Node(_Closed):
    """A workflow node as its turn stands."""

    run_id: str
    node_id: str
    session_id: str
    turn_id: str
    state: Literal["running", "waiting", "done"]
    turn_state: TurnState
    pending_input: models.PendingInput | None = None
    result: dict[str, Any] | None
    error: dict[str, Any] | None
    agent: str
    created_at: datetime
    updated_at: datetime
    webhook: Webhook | None


# The data of an event stream's frames that are not committed events (api/sse.py builds
# them; tests/unit/test_stream_frames.py holds them to these models). No route answers
# them as JSON: api/openapi.py adds them to the document's schemas.


class StreamResume(_Closed):
    """``event: stream.resume``, a stream's final frame when its reader fell too far
    behind the live channel: reconnect with ``Last-Event-ID: <after>``, the last seq it
    delivered."""

    reason: Literal["lagging"]
    after: int


class StreamResyncRequired(_Closed):
    """``event: stream.resync_required``, a stream's final frame when the retention cut
    passed its position while it caught up: rebuild from the turns, then follow on from
    ``earliest - 1`` (as for a 410 ``resync_required``)."""

    requested: int
    earliest: int
    latest: int


#: the models of the frames above, by the name the document gives them
STREAM_FRAMES: tuple[type[BaseModel], ...] = (
    closed(models.Delta),
    StreamResume,
    StreamResyncRequired,
)


class Health(_Closed):
    status: Literal["ok"]


class Ready(_Closed):
    status: Literal["ready"]
    checks: Checks
