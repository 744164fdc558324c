"""The event stream's frames say what the OpenAPI document says they do: the data of a
committed event, a ``model.delta``, ``stream.resume`` and ``stream.resync_required``
(api/sse.py) each validate against its closed model (api/http/bodies.py), and the
document carries those models as schemas, with the persisted event types listed. A
typed client generated from the document (clients/typescript) reads what is sent."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from pydantic import BaseModel

from turnkeep import models
from turnkeep.api.http import bodies
from turnkeep.api.openapi_dump import document
from turnkeep.api.sse import delta_frame, event_frame, resume_frame, resync_frame
from turnkeep.runtime.states import EventType
from turnkeep.store.errors import ResyncRequired
from turnkeep.store.records import EventRecord


def _data(frame: str) -> tuple[str, dict[str, object]]:
    fields = dict(line.split(": ", 1) for line in frame.strip("\n").split("\n"))
    return fields["event"], json.loads(fields["data"])


EVENT = EventRecord(
    "ten", "s", 7, "t1", "model.completed", 1, 1, {"message": {}}, datetime(2025, 1, 1, tzinfo=UTC)
)


@pytest.mark.parametrize(
    ("frame", "name", "model"),
    [
        (event_frame(EVENT.to_json()), "model.completed", bodies.closed(models.Event)),
        (
            delta_frame({"turn_id": "t1", "step": 2, "text": "Hi"}),
            "model.delta",
            bodies.closed(models.Delta),
        ),
        (resume_frame(41), "stream.resume", bodies.StreamResume),
        (
            resync_frame(ResyncRequired(3, 10, 90)),
            "stream.resync_required",
            bodies.StreamResyncRequired,
        ),
    ],
)
def test_each_frame_is_its_documented_model(frame: str, name: str, model: type[BaseModel]) -> None:
    event, data = _data(frame)
    assert event == name
    parsed = model.model_validate(data)  # closed: a field the model lacks fails here
    assert parsed.model_fields_set == set(data)


def test_the_document_carries_the_frames_and_the_event_types() -> None:
    schemas = document()["components"]["schemas"]
    for model in bodies.STREAM_FRAMES:
        assert schemas[model.__name__]["additionalProperties"] is False
    assert schemas["EventType"]["enum"] == [t.value for t in EventType]
    assert schemas["Event"]["properties"]["type"] == {"$ref": "#/components/schemas/EventType"}
    stream = document()["paths"]["/v1/sessions/{sid}/events"]["get"]["responses"]["200"]
    item = stream["content"]["text/event-stream"]["itemSchema"]["properties"]["data"]
    named = {ref["$ref"].rsplit("/", 1)[1] for ref in item["contentSchema"]["oneOf"]}
    assert named == {"Event", *(m.__name__ for m in bodies.STREAM_FRAMES)}
