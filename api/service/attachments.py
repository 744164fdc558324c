"""Attachments: a session's uploaded files, and a turn's references to them.

An attachment belongs to a session that exists (an upload into no session is 404;
sessions are made by admitting a turn). It is uploaded as JSON (``filename``,
``content_type``, ``data_base64``) and stored whole in Postgres (store/attachments.py
says how: pending, content, ready; deleting, gone). Bounds, checked in this order:

- the request body: at most ``MAX_UPLOAD_BODY`` bytes, refused before it is parsed
  (413 ``payload_too_large``; api/http/attachments.py). The process-wide
  ``TURNKEEP_MAX_BODY_BYTES`` (api/http/limits.py) still applies first: set below this
  bound, it is the one that refuses;
- the media type (its parameters dropped, lower-cased) one of ``CONTENT_TYPES``, else
  415 ``unsupported_attachment_type``;
- the content, once decoded, at most ``MAX_ATTACHMENT_BYTES`` (192 KiB), else 413
  ``attachment_too_large``.

Its SHA-256 is computed here, never taken from the client. The upload is idempotent
by the ``Idempotency-Key`` header, which is the attachment's id (else one is made):
the same key and content again is answered with the stored attachment (200), also
finishing an upload that was cut short; other content under it is 409
``idempotency_conflict``.

A turn's input names attachments by id (``attachments``: at most 16, no repeats;
api/service/requests.py). They are part of the input: kept with it, journalled in its
``turn.accepted`` and covered by the input hash (runtime/admission.py). At admission each must
be a ``ready`` attachment of the turn's own session (``check_references``); else 422
``attachment_not_found`` (none of that id in the session: missing, deleted or being
deleted, another session's or another tenant's) or ``attachment_not_ready`` (its upload has not
completed), and nothing is admitted. A replay of an admitted turn is not refused
whatever became of its attachments since. The model sees nothing of them yet.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from turnkeep.api.auth import Principal
from turnkeep.api.errors import (
    AttachmentNotFound,
    AttachmentPending,
    AttachmentTooLarge,
    RequestInvalid,
    UnsupportedAttachmentType,
)
from turnkeep.api.resources import ApiResources
from turnkeep.api.service.access import may_write
from turnkeep.api.service.requests import NO_NUL
from turnkeep.store.attachments import AttachmentState
from turnkeep.store.errors import IdempotencyConflict, NotFound
from turnkeep.store.records import AttachmentRecord

#: the media types an attachment may have
CONTENT_TYPES = (
    "text/plain",
    "text/markdown",
    "text/csv",
    "application/json",
    "application/pdf",
    "image/png",
    "image/jpeg",
    "image/gif",
    "image/webp",
)
#: bytes of content, decoded: 192 KiB passes, one byte more is 413
MAX_ATTACHMENT_BYTES = 192 * 1024
#: bytes of an upload's request body: the base64 of the largest content (256 KiB)
#: and 4 KiB for the JSON around it (the keys, a filename of 255 escaped characters)
MAX_UPLOAD_BODY = 256 * 1024 + 4 * 1024
#: standard base64 with padding, nothing else (no whitespace, no URL-safe alphabet)
BASE64 = r"^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$"


class AttachmentUpload(BaseModel):
    """``POST /v1/sessions/{sid}/attachments``."""

    model_config = ConfigDict(extra="forbid")

    filename: str = Field(min_length=1, max_length=255, pattern=NO_NUL)
    #: any string is read; the document lists what is accepted (else 415)
    content_type: str = Field(
        min_length=1, max_length=255, json_schema_extra={"enum": list(CONTENT_TYPES)}
    )
    data_base64: str = Field(
        max_length=MAX_UPLOAD_BODY,
        pattern=BASE64,
        description=f"the content, base64 (standard, padded); at most "
        f"{MAX_ATTACHMENT_BYTES} bytes once decoded",
    )


def media_type(content_type: str) -> str:
    """``text/plain; charset=utf-8`` -> ``text/plain``."""
    return content_type.split(";", 1)[0].strip().lower()


def too_large() -> AttachmentTooLarge:
    return AttachmentTooLarge(MAX_ATTACHMENT_BYTES)


def decode(body: AttachmentUpload) -> tuple[str, bytes]:
    """The upload's media type and content, within the bounds (else the problem)."""
    kind = media_type(body.content_type)
    if kind not in CONTENT_TYPES:
        raise UnsupportedAttachmentType(
            "the attachment's content_type is not one of: " + ", ".join(CONTENT_TYPES)
        )
    # refused before decoding: 4 characters carry 3 bytes
    if len(body.data_base64) > 4 * -(-MAX_ATTACHMENT_BYTES // 3):
        raise too_large()
    try:
        data = base64.b64decode(body.data_base64, validate=True)
    except (binascii.Error, ValueError):
        raise RequestInvalid("body.data_base64", "is not base64") from None
    if len(data) > MAX_ATTACHMENT_BYTES:
        raise too_large()
    return kind, data


@dataclass(frozen=True)
class Uploaded:
    attachment: AttachmentRecord
    #: False: the key's attachment was there already (a replay, or one finished now)
    created: bool


def upload(
    services: ApiResources, principal: Principal, session_id: str, aid: str, body: AttachmentUpload
) -> Uploaded:
    """Store an attachment (blocking): pending, its content, ready, one statement each;
    a retry under the same id and content finishes what a crash cut short."""
    may_write(principal)
    kind, data = decode(body)
    store, tenant = services.store, principal.tenant
    digest = hashlib.sha256(data).hexdigest()
    created = store.attachments.insert_attachment(
        tenant,
        session_id,
        aid,
        filename=body.filename,
        content_type=kind,
        size=len(data),
        sha256=digest,
    )
    if created is None:
        existing = store.attachments.get_attachment(tenant, session_id, aid)
        if existing is None:
            raise NotFound("session not found")
        if (existing.filename, existing.content_type, existing.sha256) != (
            body.filename,
            kind,
            digest,
        ):
            raise IdempotencyConflict(f"attachment {aid!r} was uploaded with other content")
        if existing.state is AttachmentState.DELETING:
            raise IdempotencyConflict(f"attachment {aid!r} is being deleted")
        if existing.state is AttachmentState.READY:
            return Uploaded(existing, created=False)
    # pending: ours, or one a crash left behind that this retry finishes
    store.attachments.attachment_content(tenant, session_id, aid, data=data, sha256=digest)
    ready = store.attachments.attachment_ready(tenant, session_id, aid)
    if ready is None:
        ready = store.attachments.get_attachment(tenant, session_id, aid)
        if ready is None or ready.state is not AttachmentState.READY:
            # deleted (or swept) between the statements: nothing to answer with
            raise NotFound("the attachment was deleted before its upload completed")
    return Uploaded(ready, created=created is not None)


def read(
    services: ApiResources, principal: Principal, session_id: str, aid: str
) -> AttachmentRecord:
    """An attachment's metadata; one being deleted is not found."""
    found = services.store.attachments.get_attachment(principal.tenant, session_id, aid)
    if found is None or found.state is AttachmentState.DELETING:
        raise NotFound("attachment not found")
    return found


def content(
    services: ApiResources, principal: Principal, session_id: str, aid: str
) -> tuple[AttachmentRecord, bytes]:
    return services.store.attachments.attachment_data(principal.tenant, session_id, aid)


def delete(services: ApiResources, principal: Principal, session_id: str, aid: str) -> None:
    """Mark it deleting, then delete the row: two statements, so a retry of one cut
    short between them (the row left deleting) finishes it. ``NotFound`` once gone."""
    may_write(principal)
    store = services.store
    if not store.attachments.attachment_deleting(principal.tenant, session_id, aid):
        raise NotFound("attachment not found")
    # False: a concurrent deletion or the sweep took it first; gone all the same
    store.attachments.delete_attachment(principal.tenant, session_id, aid)


def attachment_json(a: AttachmentRecord) -> dict[str, Any]:
    return {
        "session_id": a.session_id,
        "attachment_id": a.attachment_id,
        "state": a.state.value,
        "filename": a.filename,
        "content_type": a.content_type,
        "size": a.size,
        "sha256": a.sha256,
        "created_at": a.created_at.isoformat(),
    }


def location(session_id: str, aid: str) -> str:
    return f"/v1/sessions/{session_id}/attachments/{aid}"


# -- references from a turn's input ---------------------------------------------------


def check_references(
    services: ApiResources, tenant: str, session_id: str, turn_id: str, ids: Sequence[str] | None
) -> None:
    """``AttachmentRefused`` for the first of ``ids`` that is not a ready attachment of
    the session. Nothing is checked for a turn id admitted already (a replay)."""
    if not ids:
        return
    store = services.store
    try:
        store.reads.get_turn(tenant, session_id, turn_id)
        return  # a replay (or a conflict): the admission itself answers it
    except NotFound:
        pass
    states = store.attachments.attachment_states(tenant, session_id, ids)
    for i, aid in enumerate(ids):
        state = states.get(aid)
        if state is None or state is AttachmentState.DELETING:
            raise AttachmentNotFound(i, "no attachment of that id in this session")
        if state is not AttachmentState.READY:
            raise AttachmentPending(i, "the attachment's upload has not completed")
