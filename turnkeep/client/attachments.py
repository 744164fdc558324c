"""``client.attachments``: a session's files (``/v1/sessions/{sid}/attachments…``,
docs/fork-and-attachments.md): upload one, read it and its content, delete it. The calls are
built here without I/O; ``AttachmentsApi`` and ``AsyncAttachmentsApi`` send them."""

from __future__ import annotations

import base64

from turnkeep.client import calls
from turnkeep.client.calls import ApiCall, AsyncSend, Send
from turnkeep.models import Attachment


def _path(session_id: str, attachment_id: str = "", tail: str = "") -> str:
    base = f"/v1/sessions/{session_id}/attachments"
    return f"{base}/{attachment_id}{tail}" if attachment_id else base


def upload(
    session_id: str,
    content: bytes,
    *,
    filename: str,
    content_type: str,
    idempotency_key: str | None,
) -> ApiCall[Attachment]:
    body = {
        "filename": filename,
        "content_type": content_type,
        "data_base64": base64.b64encode(content).decode("ascii"),
    }
    return ApiCall(
        "POST",
        _path(session_id),
        calls.reader(Attachment),
        json=body,
        headers=calls.key(idempotency_key),
    )


def get(session_id: str, attachment_id: str) -> ApiCall[Attachment]:
    return ApiCall("GET", _path(session_id, attachment_id), calls.reader(Attachment))


def content(session_id: str, attachment_id: str) -> ApiCall[bytes]:
    return ApiCall("GET", _path(session_id, attachment_id, "/content"), calls.content)


def delete(session_id: str, attachment_id: str) -> ApiCall[None]:
    return ApiCall("DELETE", _path(session_id, attachment_id), calls.nothing)


class AttachmentsApi:
    """``client.attachments`` of the sync client."""

    def __init__(self, send: Send) -> None:
        self._send = send

    def upload(
        self,
        session_id: str,
        content: bytes,
        *,
        filename: str,
        content_type: str,
        idempotency_key: str | None = None,
    ) -> Attachment:
        """Upload a file to an existing session; answered once it is ``ready`` (its id
        is the key). At most 192 KiB; 413 ``attachment_too_large``, 415 for a type
        outside the allowlist."""
        call = upload(
            session_id,
            content,
            filename=filename,
            content_type=content_type,
            idempotency_key=idempotency_key,
        )
        return self._send(call)

    def get(self, session_id: str, attachment_id: str) -> Attachment:
        return self._send(get(session_id, attachment_id))

    def content(self, session_id: str, attachment_id: str) -> bytes:
        return self._send(content(session_id, attachment_id))

    def delete(self, session_id: str, attachment_id: str) -> None:
        """Delete it (finished by the runtime even after a crash); 404 once gone."""
        self._send(delete(session_id, attachment_id))


class AsyncAttachmentsApi:
    """``client.attachments`` of the async client: ``AttachmentsApi``'s methods, awaited."""

    def __init__(self, send: AsyncSend) -> None:
        self._send = send

    async def upload(
        self,
        session_id: str,
        content: bytes,
        *,
        filename: str,
        content_type: str,
        idempotency_key: str | None = None,
    ) -> Attachment:
        call = upload(
            session_id,
            content,
            filename=filename,
            content_type=content_type,
            idempotency_key=idempotency_key,
        )
        return await self._send(call)

    async def get(self, session_id: str, attachment_id: str) -> Attachment:
        return await self._send(get(session_id, attachment_id))

    async def content(self, session_id: str, attachment_id: str) -> bytes:
        return await self._send(content(session_id, attachment_id))

    async def delete(self, session_id: str, attachment_id: str) -> None:
        await self._send(delete(session_id, attachment_id))
