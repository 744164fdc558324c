"""Moved: the request bodies and the id rules live in api/service/requests.py.

A plain re-export for one release (an internal module: no DeprecationWarning, every
importer of ours uses the new home)."""

from api.service.requests import (
    ID_REGEX,
    MAX_ATTACHMENTS,
    NO_NUL,
    AttachmentId,
    Budget,
    InputMessage,
    PositiveInt,
    PositiveSeconds,
    TurnRequest,
    has_nul,
)

__all__ = [
    "ID_REGEX",
    "MAX_ATTACHMENTS",
    "NO_NUL",
    "AttachmentId",
    "Budget",
    "InputMessage",
    "PositiveInt",
    "PositiveSeconds",
    "TurnRequest",
    "has_nul",
]
