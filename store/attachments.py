"""Attachments in the store: the states of an attachment's row and their refusals.

An upload is three statements in autocommit (``Attachments``, sql/attachments.sql): the row,
``pending`` and without its content (``insert_attachment``); the content
(``attachment_content``); ``ready`` (``attachment_ready``). A deletion is two:
``deleting`` (``attachment_deleting``), then the row goes (``delete_attachment``).
A crash between two leaves a ``pending`` or ``deleting`` row, which no turn may
reference and no reader sees as content; a retried request finishes it, and
``Store.sweep_attachments`` (``sweep_attachments``, across tenants) deletes the ones
nobody came back for. docs/fork-and-attachments.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields
from datetime import datetime
from enum import StrEnum
from typing import Any

from turnkeep.store.db import Row
from turnkeep.store.errors import NotFound, StoreError
from turnkeep.store.statements import Statements


class AttachmentState(StrEnum):
    """Where an attachment's row is. Persisted names: pinned in a test."""

    #: the row is written, its content may not be: nothing may reference it yet
    #: (pending -> ready | deleting)
    PENDING = "pending"
    #: content written and checked: turns may reference it (ready -> deleting)
    READY = "ready"
    #: on its way out: the next statement (or the sweep) deletes the row
    DELETING = "deleting"


#: the states the sweep deletes once they are older than its grace
UNSETTLED_STATES = (AttachmentState.PENDING, AttachmentState.DELETING)


@dataclass(frozen=True)
class AttachmentRecord:
    """An attachment's metadata (store/schema.py ``attachments``), never its content."""

    tenant_id: str
    session_id: str
    attachment_id: str
    state: AttachmentState
    filename: str
    content_type: str
    size: int
    sha256: str
    created_at: datetime
    updated_at: datetime


class AttachmentNotReady(StoreError):
    """Raised when an attachment's content is asked for, or a turn references it,
    before its upload completed (``pending``)."""

    code = "attachment_not_ready"
    status = 409
    public = "the attachment's upload has not completed"


#: the state names the attachment statements take as parameters (the statements
#: compare with no literal but turn states and event types)
_ATTACHMENT_STATES = {s.name.lower(): s.value for s in AttachmentState}
_ATTACHMENT_FIELDS = tuple(f.name for f in fields(AttachmentRecord))


def _attachment_params(
    tenant_id: str, session_id: str, attachment_id: str, **values: Any
) -> dict[str, Any]:
    return {
        **_ATTACHMENT_STATES,
        "tenant_id": tenant_id,
        "session_id": session_id,
        "attachment_id": attachment_id,
        **values,
    }


def _attachment(row: Row) -> AttachmentRecord:
    values = {name: row[name] for name in _ATTACHMENT_FIELDS}
    values["state"] = AttachmentState(values["state"])
    return AttachmentRecord(**values)


class Attachments(Statements):
    """An attachment's statements (api/service/attachments.py runs them in this order)."""

    def insert_attachment(
        self,
        tenant_id: str,
        session_id: str,
        attachment_id: str,
        *,
        filename: str,
        content_type: str,
        size: int,
        sha256: str,
    ) -> AttachmentRecord | None:
        """An upload's first statement: the row, pending, no content. None when nothing
        was written: no such session, or the id is taken (``get_attachment`` says which)."""
        row = self._one(
            "insert_attachment",
            _attachment_params(
                tenant_id,
                session_id,
                attachment_id,
                filename=filename,
                content_type=content_type,
                size=size,
                sha256=sha256,
            ),
        )
        return None if row is None else _attachment(row)

    def attachment_content(
        self, tenant_id: str, session_id: str, attachment_id: str, *, data: bytes, sha256: str
    ) -> bool:
        """An upload's second statement: the content of a pending row of that hash.
        False: the row is not pending, or has another hash."""
        params = _attachment_params(tenant_id, session_id, attachment_id, data=data, sha256=sha256)
        return self._one("attachment_content", params) is not None

    def attachment_ready(
        self, tenant_id: str, session_id: str, attachment_id: str
    ) -> AttachmentRecord | None:
        """An upload's last statement: pending with content -> ready. None: not pending."""
        params = _attachment_params(tenant_id, session_id, attachment_id)
        row = self._one("attachment_ready", params)
        return None if row is None else _attachment(row)

    def get_attachment(
        self, tenant_id: str, session_id: str, attachment_id: str
    ) -> AttachmentRecord | None:
        """The attachment's metadata in whatever state; None: no such attachment."""
        params = _attachment_params(tenant_id, session_id, attachment_id, with_data=False)
        row = self._one("get_attachment", params)
        return None if row is None else _attachment(row)

    def attachment_data(
        self, tenant_id: str, session_id: str, attachment_id: str
    ) -> tuple[AttachmentRecord, bytes]:
        """A ready attachment and its content. ``NotFound``: none, or being deleted;
        ``AttachmentNotReady``: its upload has not completed."""
        params = _attachment_params(tenant_id, session_id, attachment_id, with_data=True)
        row = self._one("get_attachment", params)
        if row is None or row["state"] == AttachmentState.DELETING:
            raise NotFound("attachment not found")
        if row["state"] != AttachmentState.READY or row["data"] is None:
            raise AttachmentNotReady("the attachment's upload has not completed")
        return _attachment(row), bytes(row["data"])

    def attachment_states(
        self, tenant_id: str, session_id: str, ids: Sequence[str]
    ) -> dict[str, AttachmentState]:
        """The states of those of ``ids`` that are attachments of the session."""
        params = {"tenant_id": tenant_id, "session_id": session_id, "ids": list(ids)}
        rows = self._rows("attachment_refs", params)
        return {r["attachment_id"]: AttachmentState(r["state"]) for r in rows}

    def attachment_deleting(self, tenant_id: str, session_id: str, attachment_id: str) -> bool:
        """A deletion's first statement: -> deleting. False: no such attachment."""
        params = _attachment_params(tenant_id, session_id, attachment_id)
        return self._one("attachment_deleting", params) is not None

    def delete_attachment(self, tenant_id: str, session_id: str, attachment_id: str) -> bool:
        """A deletion's second statement: the deleting row goes. False: gone already."""
        params = _attachment_params(tenant_id, session_id, attachment_id)
        return self._one("delete_attachment", params) is not None

    def sweep_attachments(
        self, *, grace: float, limit: int
    ) -> list[tuple[str, str, str, AttachmentState]]:
        """Across tenants: delete at most ``limit`` attachments left pending or deleting
        for more than ``grace`` seconds (their API process died between statements),
        oldest first; (tenant, session, attachment, state) of each. A sweep that
        returns ``limit`` rows may have left more: call it again."""
        params = {
            **_ATTACHMENT_STATES,
            "grace": grace,
            "limit": limit,
        }
        rows = self._rows("sweep_attachments", params)
        return [
            (r["tenant_id"], r["session_id"], r["attachment_id"], AttachmentState(r["state"]))
            for r in rows
        ]
