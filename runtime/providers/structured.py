"""Structured output at the source: how a request's output schema goes on the wire,
and how the answer comes back as the response text (JSON).

- **OpenAI-compatible**: ``response_format: {"type": "json_schema", "json_schema":
  {"name": "output", "schema": ..., "strict": ...}}``. ``strict`` is true only when the
  schema already keeps strict mode's rules (``strict_compatible``); otherwise the
  schema goes as written with ``strict: false`` (a strong hint, not a guarantee). The
  schema is never rewritten to fit strict mode: making optional properties required
  or closing open objects would change what the agent asked for.
- **Anthropic**: a ``final_output`` tool whose input schema is the output schema.
  An agent without tools (and without extended thinking, which refuses a forced
  choice) is forced to call it; otherwise it is offered beside the agent's tools with
  ``tool_choice: auto`` and a line in the system prompt. Its call comes back as the
  response text, never as a tool call.

Both take an object at the root only, so any other schema is sent wrapped as the one
required property ``output`` of an object and the answer is unwrapped again.

The final answer is validated against the schema as written (the worker's
settlement); what happens here only makes a valid answer likelier.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

#: the tool an Anthropic model answers through (an agent may not have a tool of this name)
OUTPUT_TOOL = "final_output"
OUTPUT_TOOL_DESCRIPTION = (
    "Give your final answer. Call this once, when you are done, with the answer as its "
    "input; do not answer in plain text."
)
#: added to the system prompt when the model is offered, not forced, the output tool
OUTPUT_TOOL_HINT = f"When you have the final answer, give it by calling the {OUTPUT_TOOL} tool."
#: ``response_format.json_schema.name`` for OpenAI-compatible requests
RESPONSE_FORMAT_NAME = "output"
#: the property a non-object schema is wrapped in
WRAP_KEY = "output"

#: keywords OpenAI strict mode accepts (its structured-outputs guide); any other
#: keyword (``default``, ``oneOf``, ``allOf``, ``minLength``, ``$schema``...) means
#: strict: false
_STRICT_KEYWORDS = frozenset(
    {
        "type",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "enum",
        "anyOf",
        "$ref",
        "$defs",
        "definitions",
        "description",
        "title",
        "pattern",
        "format",
        "multipleOf",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "minItems",
        "maxItems",
    }
)
_STRICT_FORMATS = frozenset(
    {"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"}
)
_STRICT_TYPES = frozenset({"string", "number", "integer", "boolean", "object", "array", "null"})


def is_object_schema(schema: Mapping[str, Any]) -> bool:
    return schema.get("type") == "object"


def wire_schema(schema: Mapping[str, Any]) -> tuple[dict[str, Any], bool]:
    """The schema to send and whether it was wrapped: an object schema as it is, any
    other as the required ``output`` property of a closed object (its ``$defs`` moved
    to the new root, where its ``#/$defs/...`` references look for them)."""
    if is_object_schema(schema):
        return dict(schema), False
    inner = {k: v for k, v in schema.items() if k not in ("$defs", "definitions")}
    wrapped: dict[str, Any] = {
        "type": "object",
        "properties": {WRAP_KEY: inner},
        "required": [WRAP_KEY],
        "additionalProperties": False,
    }
    for key in ("$defs", "definitions"):
        if key in schema:
            wrapped[key] = schema[key]
    return wrapped, True


def unwrap_text(text: str) -> str:
    """The answer inside a wrapped answer's JSON; the text as it is when it is not one
    (the settlement then reports it as not matching the schema)."""
    try:
        value = json.loads(text)
    except ValueError:
        return text
    if isinstance(value, dict) and set(value) == {WRAP_KEY}:
        return json.dumps(value[WRAP_KEY], ensure_ascii=False)
    return text


def strict_compatible(schema: Mapping[str, Any]) -> bool:
    """Whether OpenAI's strict mode accepts ``schema`` as written: an object at the
    root; every object closed (``additionalProperties: false``) with every property
    required; arrays with typed items; ``$ref`` alone in its node; only the keywords
    and string formats strict mode supports. Conservative: a schema it refuses still
    goes, with ``strict: false``. (Size limits are left to the server.)"""
    if not is_object_schema(schema):
        return False
    return _strict_node(schema)


def _strict_node(node: Any) -> bool:
    """One schema node and everything below it."""
    if not isinstance(node, Mapping) or not set(node) <= _STRICT_KEYWORDS:
        return False
    if "$ref" in node:
        return len(node) == 1 and isinstance(node["$ref"], str)
    kinds = _types(node)
    if kinds is None or not _strict_scalars(node):
        return False
    if not kinds and "anyOf" not in node and "enum" not in node:
        return False  # an untyped node: strict mode needs every value typed
    children = _children(node, kinds)
    return children is not None and all(_strict_node(c) for c in children)


def _types(node: Mapping[str, Any]) -> set[str] | None:
    """The node's declared types (empty when it declares none); None when malformed."""
    types = node.get("type")
    if types is None:
        return set()
    kinds = [types] if isinstance(types, str) else types
    if not isinstance(kinds, list) or not kinds or not set(kinds) <= _STRICT_TYPES:
        return None
    return set(kinds)


def _strict_scalars(node: Mapping[str, Any]) -> bool:
    if "format" in node and node["format"] not in _STRICT_FORMATS:
        return False
    return "enum" not in node or isinstance(node["enum"], list)


def _children(node: Mapping[str, Any], kinds: set[str]) -> list[Any] | None:
    """The subschemas to check next; None when the node itself breaks a rule."""
    children: list[Any] = []
    if "object" in kinds:
        props, required = node.get("properties"), node.get("required")
        if (
            not isinstance(props, Mapping)
            or node.get("additionalProperties") is not False
            or not isinstance(required, list)
            or sorted(map(str, required)) != sorted(props)
        ):
            return None
        children += props.values()
    elif "properties" in node or "additionalProperties" in node or "required" in node:
        return None
    if "array" in kinds:
        if not isinstance(node.get("items"), Mapping):
            return None
        children.append(node["items"])
    elif "items" in node:
        return None
    if "anyOf" in node:
        if not isinstance(node["anyOf"], list) or not node["anyOf"]:
            return None
        children += node["anyOf"]
    for key in ("$defs", "definitions"):
        if key in node:
            if not isinstance(node[key], Mapping):
                return None
            children += node[key].values()
    return children


def thinking_enabled(options: Mapping[str, Any]) -> bool:
    """Whether Anthropic extended thinking is on in a request's options (it refuses a
    forced tool choice)."""
    thinking = options.get("thinking")
    return isinstance(thinking, Mapping) and thinking.get("type") not in (None, "disabled")
