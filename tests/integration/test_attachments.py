"""Attachments over the API: the bounds (192 KiB decoded, the upload body, the media
types), the server's SHA-256, tenancy, idempotent uploads, deletion in two steps, the
sweep, and a turn's references checked at admission (api/service/attachments.py)."""

from __future__ import annotations

import base64
import hashlib
import json
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.integration.api_server import Api, admit, serve_api
from turnkeep.api.service.attachments import MAX_ATTACHMENT_BYTES, MAX_UPLOAD_BODY
from turnkeep.store.attachments import AttachmentState
from turnkeep.store.errors import NotFound
from turnkeep.store.facade import Store


@pytest.fixture(scope="module")
def api(service_env: dict[str, str]) -> Iterator[Api]:
    # the process-wide body limit above the upload route's own, so the route's applies
    with serve_api(service_env, max_body_bytes=1 << 20) as handle:
        yield handle


def _body(data: bytes, filename: str = "notes.txt", content_type: str = "text/plain") -> str:
    return json.dumps(
        {
            "filename": filename,
            "content_type": content_type,
            "data_base64": base64.b64encode(data).decode(),
        }
    )


def upload(
    c: httpx.Client,
    sid: str,
    data: bytes,
    *,
    key: str | None = None,
    filename: str = "notes.txt",
    content_type: str = "text/plain",
) -> httpx.Response:
    headers = {"Content-Type": "application/json"}
    if key is not None:
        headers["Idempotency-Key"] = key
    return c.post(
        f"/v1/sessions/{sid}/attachments",
        content=_body(data, filename, content_type),
        headers=headers,
    )


def _session(api: Api, sid: str, who: str = "a") -> httpx.Client:
    """A client of ``who`` and the session ``sid`` made by admitting a turn."""
    c = api.client(who)
    assert admit(c, sid).status_code == 202
    return c


def _refer(c: httpx.Client, sid: str, ids: list[str], key: str | None = None) -> httpx.Response:
    return admit(c, sid, key, text="Summarise the file", attachments=ids)


def _problem(r: httpx.Response, status: int, code: str) -> dict[str, Any]:
    assert r.status_code == status, r.text
    assert r.headers["content-type"] == "application/problem+json"
    body: dict[str, Any] = r.json()
    assert body["code"] == code, body
    return body


# -- bounds ------------------------------------------------------------------------------


def test_exactly_192_kib_passes_and_one_byte_more_is_attachment_too_large(
    api: Api, sid: str
) -> None:
    c = _session(api, sid)
    exact = bytes(range(256)) * (MAX_ATTACHMENT_BYTES // 256)
    assert len(exact) == 196_608
    r = upload(c, sid, exact, content_type="application/pdf")
    assert r.status_code == 201, r.text
    assert r.json()["size"] == 196_608 and r.json()["state"] == "ready"
    assert r.json()["sha256"] == hashlib.sha256(exact).hexdigest()

    over = upload(c, sid, exact + b"x", content_type="application/pdf")
    body = _problem(over, 413, "attachment_too_large")
    assert body["limit"] == 196_608
    # (the body itself was within the upload bound: the decoded size refused it)
    assert len(_body(exact + b"x", content_type="application/pdf")) <= MAX_UPLOAD_BODY


def _padded(size: int, data: bytes = b"tiny") -> bytes:
    """A valid upload of ``data`` whose body is ``size`` bytes (JSON whitespace)."""
    raw = _body(data).encode()
    assert len(raw) <= size
    return raw[:-1] + b" " * (size - len(raw)) + b"}"


def test_the_upload_body_is_bounded_before_it_is_parsed(api: Api, sid: str) -> None:
    c = _session(api, sid)
    url = f"/v1/sessions/{sid}/attachments"
    json_headers = {"Content-Type": "application/json"}
    # a small attachment in a body of exactly the bound passes ...
    at = c.post(url, content=_padded(MAX_UPLOAD_BODY), headers=json_headers)
    assert at.status_code == 201, at.text
    assert at.json()["size"] == 4
    # ... one byte more is refused by its size alone, whatever it decodes to
    over = c.post(url, content=_padded(MAX_UPLOAD_BODY + 1), headers=json_headers)
    assert _problem(over, 413, "payload_too_large")["limit"] == MAX_UPLOAD_BODY
    # refused before it is parsed: not even JSON, yet 413, not 400 invalid_json
    junk = c.post(url, content=b"{" * (MAX_UPLOAD_BODY + 1), headers=json_headers)
    _problem(junk, 413, "payload_too_large")
    # a chunked body (no Content-Length) is counted as it arrives
    chunked = c.post(url, content=iter([b"{" * 65536] * 5), headers=json_headers)
    assert "content-length" not in chunked.request.headers
    _problem(chunked, 413, "payload_too_large")
    # and not invalid JSON under the bound: the ordinary 400
    _problem(c.post(url, content=b"{" * 100, headers=json_headers), 400, "invalid_json")


def test_a_type_off_the_allowlist_is_415_and_parameters_are_dropped(api: Api, sid: str) -> None:
    c = _session(api, sid)
    for kind in ("text/html", "image/svg+xml", "application/octet-stream"):
        _problem(upload(c, sid, b"<b>x</b>", content_type=kind), 415, "unsupported_attachment_type")
    r = upload(c, sid, b"a,b\n1,2\n", content_type="TEXT/CSV; charset=utf-8")
    assert r.status_code == 201 and r.json()["content_type"] == "text/csv"
    # not base64: the model's own 422
    bad = c.post(
        f"/v1/sessions/{sid}/attachments",
        json={"filename": "x", "content_type": "text/plain", "data_base64": "a b"},
    )
    _problem(bad, 422, "validation_error")


# -- what is stored --------------------------------------------------------------------


def test_the_sha256_is_the_servers_and_the_content_comes_back_as_uploaded(
    api: Api, sid: str
) -> None:
    c = _session(api, sid)
    data = "héllo, wörld\n".encode()
    r = upload(c, sid, data, key="greeting", filename="grüße.txt")
    assert r.status_code == 201, r.text
    meta = r.json()
    assert meta["attachment_id"] == "greeting" and meta["session_id"] == sid
    assert meta["sha256"] == hashlib.sha256(data).hexdigest() and meta["size"] == len(data)
    assert r.headers["location"] == f"/v1/sessions/{sid}/attachments/greeting"
    assert c.get(f"/v1/sessions/{sid}/attachments/greeting").json() == meta

    got = c.get(f"/v1/sessions/{sid}/attachments/greeting/content")
    assert got.status_code == 200 and got.content == data
    assert got.headers["content-type"] == "text/plain"
    assert got.headers["x-content-type-options"] == "nosniff"
    assert got.headers["content-disposition"] == "attachment; filename*=UTF-8''gr%C3%BC%C3%9Fe.txt"


def test_another_tenant_gets_404_everywhere(api: Api, sid: str) -> None:
    c = _session(api, sid)
    assert upload(c, sid, b"mine", key="secret").status_code == 201
    b = api.client("b")
    for path in ("", "/content"):
        _problem(b.get(f"/v1/sessions/{sid}/attachments/secret{path}"), 404, "not_found")
    _problem(b.delete(f"/v1/sessions/{sid}/attachments/secret"), 404, "not_found")
    # nor may b upload into a's session: to b it does not exist
    _problem(upload(b, sid, b"theirs"), 404, "not_found")
    # nor into no session at all
    _problem(upload(c, f"nobody-{uuid.uuid4().hex[:8]}", b"x"), 404, "not_found")
    assert c.get(f"/v1/sessions/{sid}/attachments/secret/content").content == b"mine"


def test_a_reader_may_read_but_not_upload_or_delete(api: Api, sid: str) -> None:
    c = _session(api, sid)
    assert upload(c, sid, b"x", key="r1").status_code == 201
    reader = api.client("a-reader")
    _problem(upload(reader, sid, b"y"), 403, "forbidden_role")
    _problem(reader.delete(f"/v1/sessions/{sid}/attachments/r1"), 403, "forbidden_role")
    assert reader.get(f"/v1/sessions/{sid}/attachments/r1").status_code == 200


def test_an_upload_is_idempotent_by_its_key_and_a_retry_finishes_a_cut_one(
    api: Api, store: Store, sid: str
) -> None:
    c = _session(api, sid)
    first = upload(c, sid, b"one", key="k1")
    assert first.status_code == 201
    again = upload(c, sid, b"one", key="k1")
    assert again.status_code == 200 and again.json() == first.json()
    _problem(upload(c, sid, b"two", key="k1"), 409, "idempotency_conflict")
    _problem(upload(c, sid, b"one", key="k1", filename="other.txt"), 409, "idempotency_conflict")

    # an upload whose API died after its first statement: the row is pending, no content
    data = b"cut short"
    row = store.attachments.insert_attachment(
        api.tenant_a,
        sid,
        "k2",
        filename="notes.txt",
        content_type="text/plain",
        size=len(data),
        sha256=hashlib.sha256(data).hexdigest(),
    )
    assert row is not None and row.state is AttachmentState.PENDING
    assert c.get(f"/v1/sessions/{sid}/attachments/k2").json()["state"] == "pending"
    _problem(c.get(f"/v1/sessions/{sid}/attachments/k2/content"), 409, "attachment_not_ready")
    done = upload(c, sid, data, key="k2")
    assert done.status_code == 200 and done.json()["state"] == "ready", done.text
    assert c.get(f"/v1/sessions/{sid}/attachments/k2/content").content == data


# -- references at admission ---------------------------------------------------------------


def test_a_turn_names_ready_attachments_and_they_are_part_of_its_input(
    api: Api, store: Store, sid: str
) -> None:
    c = _session(api, sid)
    for key in ("f1", "f2"):
        assert upload(c, sid, key.encode(), key=key).status_code == 201
    r = _refer(c, sid, ["f2", "f1"], key="with-files")
    assert r.status_code == 202, r.text
    turn = store.reads.get_turn(api.tenant_a, sid, "with-files")
    assert turn.input["attachments"] == ["f2", "f1"]
    accepted = store.reads.turn_events(api.tenant_a, sid, "with-files")[0]
    assert accepted.data["input"]["attachments"] == ["f2", "f1"]
    # the references are hashed with the input: the same key with others is a conflict
    assert _refer(c, sid, ["f2", "f1"], key="with-files").status_code == 200
    _problem(_refer(c, sid, ["f1"], key="with-files"), 409, "idempotency_conflict")
    _problem(_refer(c, sid, ["f1", "f2"], key="with-files"), 409, "idempotency_conflict")
    # and a turn without any keeps the hash it always had (its own key, no references)
    plain = admit(c, sid, "no-files")
    assert plain.status_code == 202
    assert admit(c, sid, "no-files", attachments=[]).status_code == 200
    _problem(_refer(c, sid, ["f1", "f1"]), 422, "validation_error")
    _problem(_refer(c, sid, [f"a{i}" for i in range(17)]), 422, "validation_error")


def _refused(
    api: Api, store: Store, c: httpx.Client, sid: str, aid: str, code: str
) -> dict[str, Any]:
    """A reference refused with ``code``, and nothing admitted."""
    head = store.reads.get_session(api.tenant_a, sid).head_seq
    key = f"refused-{uuid.uuid4().hex[:8]}"
    body = _problem(_refer(c, sid, ["fine", aid], key=key), 422, code)
    assert body["errors"] == [
        {"loc": ["body", "attachments", "1"], "msg": body["errors"][0]["msg"]}
    ]
    with pytest.raises(NotFound):
        store.reads.get_turn(api.tenant_a, sid, key)
    assert store.reads.get_session(api.tenant_a, sid).head_seq == head
    return body


def test_missing_foreign_and_pending_references_are_refused_and_nothing_is_admitted(
    api: Api, store: Store, sid: str
) -> None:
    c = _session(api, sid)
    assert upload(c, sid, b"ok", key="fine").status_code == 201
    _refused(api, store, c, sid, "never-uploaded", "attachment_not_found")
    # another session's attachment (same tenant)
    other = f"{sid}-other"
    _session(api, other)
    assert upload(c, other, b"elsewhere", key="elsewhere").status_code == 201
    _refused(api, store, c, sid, "elsewhere", "attachment_not_found")
    # another tenant's, in a session of the same name
    b = _session(api, sid, "b")
    assert upload(b, sid, b"theirs", key="theirs").status_code == 201
    _refused(api, store, c, sid, "theirs", "attachment_not_found")
    # one whose upload has not completed
    store.attachments.insert_attachment(
        api.tenant_a,
        sid,
        "half",
        filename="h.txt",
        content_type="text/plain",
        size=1,
        sha256=hashlib.sha256(b"h").hexdigest(),
    )
    _refused(api, store, c, sid, "half", "attachment_not_ready")
    # a first turn that would create its session: refused, and no session made
    fresh = f"fresh-{uuid.uuid4().hex[:8]}"
    _problem(_refer(c, fresh, ["fine"]), 422, "attachment_not_found")
    with pytest.raises(NotFound):
        store.reads.get_session(api.tenant_a, fresh)


# -- deletion and the sweep -------------------------------------------------------------------


def test_a_deleted_attachment_is_gone_and_cannot_be_referenced(
    api: Api, store: Store, sid: str
) -> None:
    c = _session(api, sid)
    assert upload(c, sid, b"ok", key="fine").status_code == 201
    assert upload(c, sid, b"bye", key="bye").status_code == 201
    r = c.delete(f"/v1/sessions/{sid}/attachments/bye")
    assert r.status_code == 204 and r.content == b""
    _problem(c.get(f"/v1/sessions/{sid}/attachments/bye"), 404, "not_found")
    _problem(c.get(f"/v1/sessions/{sid}/attachments/bye/content"), 404, "not_found")
    _refused(api, store, c, sid, "bye", "attachment_not_found")
    _problem(c.delete(f"/v1/sessions/{sid}/attachments/bye"), 404, "not_found")


def test_a_retried_delete_finishes_one_cut_short(api: Api, store: Store, sid: str) -> None:
    c = _session(api, sid)
    assert upload(c, sid, b"ok", key="fine").status_code == 201
    assert upload(c, sid, b"half-gone", key="half-gone").status_code == 201
    # a deletion whose API died after its first statement: the row is left deleting
    assert store.attachments.attachment_deleting(api.tenant_a, sid, "half-gone")
    left = store.attachments.get_attachment(api.tenant_a, sid, "half-gone")
    assert left is not None and left.state is AttachmentState.DELETING
    # already gone to readers and to admissions
    _problem(c.get(f"/v1/sessions/{sid}/attachments/half-gone"), 404, "not_found")
    _problem(c.get(f"/v1/sessions/{sid}/attachments/half-gone/content"), 404, "not_found")
    _refused(api, store, c, sid, "half-gone", "attachment_not_found")
    # nor may an upload under its key bring it back while it goes
    _problem(upload(c, sid, b"half-gone", key="half-gone"), 409, "idempotency_conflict")
    assert c.delete(f"/v1/sessions/{sid}/attachments/half-gone").status_code == 204
    assert store.attachments.get_attachment(api.tenant_a, sid, "half-gone") is None
    # gone: its key may be used again
    assert upload(c, sid, b"anew", key="half-gone").status_code == 201


def test_the_sweep_deletes_what_was_left_pending_or_deleting(
    api: Api, store: Store, sid: str
) -> None:
    c = _session(api, sid)
    tenant = api.tenant_a
    for key in ("kept", "going"):
        assert upload(c, sid, key.encode(), key=key).status_code == 201
    store.attachments.attachment_deleting(tenant, sid, "going")
    store.attachments.insert_attachment(
        tenant,
        sid,
        "stalled",
        filename="s.txt",
        content_type="text/plain",
        size=1,
        sha256=hashlib.sha256(b"s").hexdigest(),
    )
    # within the grace: an upload or deletion may still be on its way
    assert (
        tenant,
        sid,
        "stalled",
        AttachmentState.PENDING,
    ) not in store.attachments.sweep_attachments(grace=3600, limit=100)
    swept: list[tuple[str, str, str, AttachmentState]] = []
    while batch := store.attachments.sweep_attachments(grace=0, limit=2):
        swept += batch
    mine = {(aid, state) for t, s, aid, state in swept if (t, s) == (tenant, sid)}
    assert mine == {("stalled", AttachmentState.PENDING), ("going", AttachmentState.DELETING)}
    assert store.attachments.get_attachment(tenant, sid, "stalled") is None
    assert store.attachments.get_attachment(tenant, sid, "going") is None
    kept = store.attachments.get_attachment(tenant, sid, "kept")
    assert kept is not None and kept.state is AttachmentState.READY
