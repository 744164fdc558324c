"""Attachments in the store: the states of an attachment's row and their refusals.

An upload is three statements in autocommit (store/transitions.py): the row,
``pending`` and without its content (``insert_attachment``); the content
(``attachment_content``); ``ready`` (``attachment_ready``). A deletion is two:
``deleting`` (``attachment_deleting``), then the row goes (``delete_attachment``).
A crash between two leaves a ``pending`` or ``deleting`` row, which no turn may
reference and no reader sees as content; a retried request finishes it, and
``Store.sweep_attachments`` (``sweep_attachments``, across tenants) deletes the ones
nobody came back for. docs/fork-and-attachments.md.
"""

from __future__ import annotations

from enum import StrEnum

from store.errors import StoreError


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


class AttachmentNotReady(StoreError):
    """Raised when an attachment's content is asked for, or a turn references it,
    before its upload completed (``pending``)."""

    code = "attachment_not_ready"
