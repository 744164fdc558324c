"""The hot path's JSON codec: msgspec's encoder and decoder where the standard library's
cost showed on every step (jsonb parameters, the rows Postgres hands back, the live
feed's channel messages).

Only where the text is parsed again: a jsonb parameter is stored as a value (its
spacing, escapes and number spelling are gone once Postgres has it) and a channel
message is decoded before anyone reads it. Text that is kept, hashed or sent as it is
stays on ``json`` with its own settings: canonical JSON and the hashes over it
(runtime/hashing.py), the SSE frames (api/sse.py; msgspec spells ``1e+16`` as
``1e16``).

``dumps`` writes the same value ``json.dumps(value, separators=(",", ":"))`` does, in
the same key order; what differs is spelling (non-ASCII kept as UTF-8, ``1e16``), and
two cases the standard library never got to Postgres: a NaN or infinity is written as
``null`` (``json`` wrote ``NaN``, which Postgres refused), and a ``datetime``,
``date``, ``UUID`` or ``Decimal`` is written as its string (``json`` raised). A dict
with keys msgspec refuses (``True``, ``None``) goes to ``json``, which spells them as
it always did. ``loads`` reads what ``json.loads`` reads into the same values; a number
beyond a double (Postgres's numeric holds any) or a ``NaN`` token goes to ``json``.
"""

from __future__ import annotations

import json
from typing import Any

import msgspec

_encoder = msgspec.json.Encoder()
_decoder = msgspec.json.Decoder()


def encode(value: Any) -> bytes:
    """``value`` as compact JSON, UTF-8."""
    try:
        return _encoder.encode(value)
    except TypeError:
        # keys msgspec does not take (bools, None): the standard library's spelling
        return json.dumps(value, separators=(",", ":")).encode()


def dumps(value: Any) -> str:
    """``value`` as compact JSON text."""
    return encode(value).decode()


def loads(data: bytes | bytearray | memoryview | str) -> Any:
    """The value of JSON ``data``."""
    try:
        return _decoder.decode(data)
    except (msgspec.DecodeError, msgspec.ValidationError):
        # out of msgspec's range (1e400 as infinity) or a token only json reads (NaN);
        # what json refuses too raises json's ValueError, as before
        return json.loads(bytes(data) if isinstance(data, memoryview) else data)
