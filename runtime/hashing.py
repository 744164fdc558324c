"""Canonical JSON and the hashes pinned at admission."""

from __future__ import annotations

import hashlib
import json
from typing import Any


def canonical_json(value: Any) -> str:
    """Sorted keys, no insignificant whitespace, UTF-8 kept as is: one text per value."""
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )


def sha256_hex(value: Any) -> str:
    return hashlib.sha256(canonical_json(value).encode("utf-8")).hexdigest()


def input_hash(
    *,
    messages: list[dict[str, Any]],
    agent_hash: str,
    output_schema: dict[str, Any] | None,
    budget: dict[str, Any] | None,
) -> str:
    """The identity of a turn's request: same hash, same turn (idempotent replay)."""
    return sha256_hex(
        {
            "input": messages,
            "agent_hash": agent_hash,
            "output_schema": output_schema,
            "budget": budget,
        }
    )
