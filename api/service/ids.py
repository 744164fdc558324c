"""Ids a client names by an ``Idempotency-Key`` (turns, projects, forks, uploads)."""

from __future__ import annotations

import re
import uuid

from turnkeep.api.errors import InvalidKey, RequestInvalid
from turnkeep.api.service.requests import ID_REGEX

_KEY = re.compile(ID_REGEX)


def turn_id(key: str | None) -> str:
    """The id an idempotency key names, or a new one."""
    if key is None:
        return uuid.uuid4().hex
    if not _KEY.fullmatch(key):
        raise InvalidKey("an idempotency key must match [A-Za-z0-9._-]{1,128}")
    return key


def new_id(key: str | None, named: str | None, where: str) -> str:
    """The id a body names at ``where`` (``body.project_id``), else the key's, else a
    new one; a body and a key naming two ids is ``RequestInvalid``."""
    if key is not None and named is not None and key != named:
        raise RequestInvalid(where, "differs from the Idempotency-Key")
    return named if named is not None else turn_id(key)
