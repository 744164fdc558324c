"""Bounds of what one request may ask for, from the settings (runtime/settings.py).

- A turn's request (``check_turn``, on the submit path so every surface has it):
  each message at most ``max_message_chars`` characters; the output schema at most
  ``max_schema_bytes`` serialized (canonical JSON, UTF-8) and ``max_schema_depth``
  levels of nesting, checked in that order and before the schema is checked as a JSON
  Schema, so a huge or deep one costs a size count and an iterative walk, never the
  meta-schema's recursive validation. Past a bound: ``RequestInvalid`` naming the
  field (HTTP: 422 ``validation_error``).
- SSE streams (``StreamSlots``): at most ``max_streams_per_tenant`` open per tenant,
  counted per API process (N processes allow up to N times as many); the next one is
  ``QuotaExceeded`` (HTTP: 429 ``quota_exceeded`` with Retry-After). A stream gives
  its slot back however it ends.

The quotas on active turns are counted by Postgres, inside the admission statement
(``admit_turn`` in store/sql/turns.sql), so that a replay is never refused.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from jsonschema import SchemaError
from jsonschema.validators import validator_for

from turnkeep.api.errors import RequestInvalid
from turnkeep.api.service.requests import TurnRequest
from turnkeep.runtime.hashing import canonical_json
from turnkeep.runtime.settings import Settings
from turnkeep.store.errors import QuotaExceeded

SCHEMA_FIELD = "body.output_schema"


def depth_over(value: Any, limit: int) -> bool:
    """Whether ``value`` nests objects and arrays more than ``limit`` deep (a scalar is
    depth 0, ``{}`` depth 1). Iterative, and stops at the first level past the limit."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if level > limit:
            return True
        stack.extend((child, level + 1) for child in children)
    return False


def check_schema(schema: dict[str, Any], settings: Settings) -> None:
    """An output schema within the size and depth bounds, and a valid JSON Schema."""
    size = len(canonical_json(schema).encode("utf-8"))
    if size > settings.bounds.max_schema_bytes:
        raise RequestInvalid(
            SCHEMA_FIELD, f"is {size} bytes serialized; at most {settings.bounds.max_schema_bytes}"
        )
    if depth_over(schema, settings.bounds.max_schema_depth):
        raise RequestInvalid(
            SCHEMA_FIELD, f"nests deeper than {settings.bounds.max_schema_depth} levels"
        )
    try:
        validator_for(schema).check_schema(schema)
    except SchemaError as exc:
        raise RequestInvalid(SCHEMA_FIELD, f"is not a valid JSON Schema: {exc.message}") from None


def check_turn(body: TurnRequest, settings: Settings) -> None:
    """A turn's request within the bounds; ``RequestInvalid`` for the first one passed."""
    limit = settings.bounds.max_message_chars
    for i, message in enumerate(body.input):
        if len(message.content) > limit:
            raise RequestInvalid(
                f"body.input.{i}.content",
                f"is {len(message.content)} characters long; at most {limit}",
            )
    if body.output_schema is not None:
        check_schema(body.output_schema, settings)


class StreamSlots:
    """The SSE streams each tenant holds open on this process."""

    def __init__(self) -> None:
        self._open: dict[str, int] = {}
        self._lock = threading.Lock()

    def open(self, tenant: str) -> int:
        with self._lock:
            return self._open.get(tenant, 0)

    def take(self, tenant: str, limit: int) -> Callable[[], None]:
        """A slot for one more stream of ``tenant``, or ``QuotaExceeded`` at ``limit``.
        Returns the slot's release (calling it again does nothing)."""
        with self._lock:
            held = self._open.get(tenant, 0)
            if held >= limit:
                raise QuotaExceeded("streams", limit)
            self._open[tenant] = held + 1
        released = False

        def release() -> None:
            nonlocal released
            with self._lock:
                if released:
                    return
                released = True
                left = self._open[tenant] - 1
                if left:
                    self._open[tenant] = left
                else:
                    del self._open[tenant]

        return release
