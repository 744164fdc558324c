"""Keyset cursors of the newest-first listings (sessions, projects): the last row's
creation time and id, URL-safe base64 without padding. A cursor that is not one is
the 422 of its query parameter, the same for every listing."""

from __future__ import annotations

import base64
import binascii
import re
from datetime import datetime

from turnkeep.api.errors import RequestInvalid
from turnkeep.api.service.requests import ID_REGEX

_ID = re.compile(ID_REGEX)


def bad_cursor() -> RequestInvalid:
    return RequestInvalid("query.after", "not a cursor of this listing")


def cursor(created_at: datetime, row_id: str) -> str:
    raw = f"{created_at.isoformat()}|{row_id}".encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def position(value: str) -> tuple[datetime, str]:
    """The (creation time, id) a cursor names; ``bad_cursor()`` raised for another."""
    try:
        raw = base64.urlsafe_b64decode(value + "=" * (-len(value) % 4)).decode()
        at, sep, row_id = raw.partition("|")
        # only ids are ever written there: a NUL (Postgres refuses it in text) or
        # other text never reaches a statement
        if not sep or not _ID.fullmatch(row_id):
            raise ValueError(raw)
        return datetime.fromisoformat(at), row_id
    except (ValueError, binascii.Error, UnicodeDecodeError):
        raise bad_cursor() from None
