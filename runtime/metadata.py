"""Metadata: the small string labels a session and a turn carry, set at admission and
searched by (docs/search.md). Pure: the bounds, the checks every surface shares, the
search filter's ``key=value`` form, and the layer metadata adds to a turn's identity.

A label is ``key: value``. Keys are ``[A-Za-z0-9_.:/-]{1,64}`` (no ``=``, so a filter's
``key=value`` splits one way), values any text of at most 256 characters without
U+0000; at most 16 labels on one session or turn. An empty object is no metadata.
They are stored as given (``sessions.metadata``, ``turns.metadata``) and once more as
rows of ``session_metadata`` and ``turn_metadata``, which the searches walk
(store/schema_search.py says why a jsonb index could not serve).

Identity: a turn's metadata and the session metadata its admission names are part of
its identity hash (``identity_layer``): a replay that names other metadata is a
conflict (409), as one with other input is, and a turn without either keeps the hash
it had before metadata existed.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from turnkeep.runtime.hashing import sha256_hex

#: labels one session or turn carries at most
MAX_LABELS = 16
#: characters of a key, at most
MAX_KEY = 64
#: characters of a value, at most
MAX_VALUE = 256
#: what a key may be made of
KEY_PATTERN = r"^[A-Za-z0-9_.:/-]{1,64}$"
_KEY = re.compile(KEY_PATTERN)

Metadata = dict[str, str]


def check(value: Mapping[str, object]) -> Metadata:
    """``value`` as metadata; ValueError naming what is wrong (a surface answers it as
    a 422 naming the field)."""
    if len(value) > MAX_LABELS:
        raise ValueError(f"at most {MAX_LABELS} keys")
    out: Metadata = {}
    for key, item in value.items():
        if not isinstance(key, str) or not _KEY.match(key):
            raise ValueError(f"key {str(key)[:80]!r} is not {KEY_PATTERN}")
        if not isinstance(item, str):
            raise ValueError(f"the value of {key!r} is not a string")
        if len(item) > MAX_VALUE:
            raise ValueError(f"the value of {key!r} is over {MAX_VALUE} characters")
        if "\x00" in item:
            raise ValueError(f"the value of {key!r} holds U+0000 (NUL)")
        out[key] = item
    return out


def parse_filters(items: Iterable[str]) -> Metadata:
    """Search filters ``key=value`` (several ANDed) as the pairs they name; ValueError
    for one without ``=``, a bad key or value, a key named twice, or too many."""
    pairs: Metadata = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep:
            raise ValueError(f"{item[:80]!r} is not key=value")
        if key in pairs:
            raise ValueError(f"key {key[:80]!r} is named twice")
        pairs[key] = value
    return check(pairs)


def identity_layer(
    digest: str, metadata: Mapping[str, str] | None, session_metadata: Mapping[str, str] | None
) -> str:
    """The identity hash with the metadata an admission names; ``digest`` as it is
    when it names none (so every turn before metadata keeps its identity)."""
    if not metadata and not session_metadata:
        return digest
    return sha256_hex(
        {
            "input_hash": digest,
            "metadata": dict(metadata or {}),
            "session_metadata": dict(session_metadata or {}),
        }
    )
