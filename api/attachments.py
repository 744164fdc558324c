"""Moved to ``api.service.attachments``; this module re-exports it for one release."""

from __future__ import annotations

import warnings

from api.errors import AttachmentRefused
from api.service.attachments import (
    CONTENT_TYPES,
    MAX_ATTACHMENT_BYTES,
    MAX_UPLOAD_BODY,
    AttachmentUpload,
    Uploaded,
    attachment_json,
    check_references,
    content,
    decode,
    delete,
    location,
    read,
    upload,
)

__all__ = [
    "CONTENT_TYPES",
    "MAX_ATTACHMENT_BYTES",
    "MAX_UPLOAD_BODY",
    "AttachmentRefused",
    "AttachmentUpload",
    "Uploaded",
    "attachment_json",
    "check_references",
    "content",
    "decode",
    "delete",
    "location",
    "read",
    "upload",
]

warnings.warn(
    "api.attachments moved to api.service.attachments; this alias goes in the next release",
    DeprecationWarning,
    stacklevel=2,
)
