"""What an incoming A2A message says: a turn's input, or the answer to an open request.

Only text and data parts are accepted, from the user role.
"""

from __future__ import annotations

import json
from typing import Any

from a2a.types import Message, Part, Role
from a2a.utils.errors import ContentTypeNotSupportedError, InvalidParamsError
from google.protobuf.json_format import MessageToDict

from turnkeep.runtime.hashing import canonical_json


def _plain(value: Any) -> Any:
    """JSON as sent: protobuf's Value holds every number as a double (4 -> 4.0)."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _data(part: Part) -> Any:
    return _plain(MessageToDict(part.data))


def _check_parts(message: Message) -> None:
    if message.role != Role.ROLE_USER:
        raise InvalidParamsError("a message to an agent has the user role")
    if any(p.HasField("raw") or p.HasField("url") for p in message.parts):
        raise ContentTypeNotSupportedError("only text and data parts are accepted")


def text_of(message: Message) -> str:
    """A turn's input: the text parts, and each data part as canonical JSON."""
    _check_parts(message)
    texts = [
        p.text if p.HasField("text") else canonical_json(_data(p))
        for p in message.parts
        if p.HasField("text") or p.HasField("data")
    ]
    text = "\n".join(t for t in texts if t)
    if not text:
        raise InvalidParamsError("a message needs a text or data part")
    return text


def answer_of(message: Message) -> dict[str, Any]:
    """The answer a message on an input-required task gives: a data part, or JSON text."""
    _check_parts(message)
    data = [_data(p) for p in message.parts if p.HasField("data")]
    if data:
        value = data[0]
    else:
        try:
            value = json.loads("\n".join(p.text for p in message.parts if p.HasField("text")))
        except ValueError:
            value = None
    if not isinstance(value, dict):
        raise InvalidParamsError(
            "an answer is a data part (or JSON text) with an object matching the "
            "request's response_schema",
            data={"code": "validation_error"},
        )
    return value


def answers_of(meta: dict[str, Any]) -> list[tuple[str, dict[str, Any]]] | None:
    """The answers to several requests a message's metadata gives (``answers``: a list
    of ``{"request_id", "response"}``), None when it gives none."""
    given = meta.get("answers")
    if given is None:
        return None
    if not (
        isinstance(given, list)
        and 0 < len(given) <= 64
        and all(
            isinstance(a, dict)
            and isinstance(a.get("request_id"), str)
            and isinstance(a.get("response"), dict)
            for a in given
        )
    ):
        raise InvalidParamsError(
            'metadata answers is a list of {"request_id": …, "response": {…}}',
            data={"code": "validation_error"},
        )
    return [(str(a["request_id"]), dict(a["response"])) for a in given]


def metadata_of(message: Message) -> dict[str, Any]:
    """The message's metadata (``skill``, ``request_id``), empty when it has none."""
    return MessageToDict(message.metadata) if message.HasField("metadata") else {}
