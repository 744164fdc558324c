"""The generic bridge end to end (runtime/bridges/generic.py): a JSON message signed as
turnkeep signs its webhooks comes in, the turn's outcome goes out as the signed
turnkeep webhook to the binding's reply URL, naming its thread. The same small
interface as Slack's, on the same submit path and outbox."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.conftest import WORKER_ENV
from tests.procs import Procs, wait_for
from tests.webhook_receiver import Receiver
from turnkeep.api.auth import token_digest
from turnkeep.runtime import webhooks
from turnkeep.runtime.bridges import GENERIC, session_id, turn_id
from turnkeep.runtime.states import TurnState
from turnkeep.store.errors import NotFound
from turnkeep.store.facade import Store

INBOUND = "bridge-in-" + uuid.uuid4().hex
OUTBOUND = "whsec-" + uuid.uuid4().hex


@pytest.fixture(scope="module")
def served(
    service_env: dict[str, str],
    effects_tables: None,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[str, dict[str, str], str]]:
    tenant = f"t-{uuid.uuid4().hex[:8]}"
    token = f"adm-{uuid.uuid4().hex}"
    tokens = [{"sha256": token_digest(token), "tenant": tenant, "subject": "ops", "role": "admin"}]
    env = {
        **service_env,
        **WORKER_ENV,
        "TURNKEEP_BRIDGE_SECRET": INBOUND,
        "TURNKEEP_BRIDGE_TENANT": tenant,
        "TURNKEEP_WEBHOOK_SECRET": OUTBOUND,
        # the receiver listens on 127.0.0.1: a deployment refuses that unless it allows it
        "TURNKEEP_WEBHOOK_ALLOW_PRIVATE": "1",
        "TURNKEEP_WEBHOOK_INTERVAL": "0.3",
        "TURNKEEP_WEBHOOK_BACKOFF": "0.2",
    }
    procs = Procs(env=env, logdir=Path(tmp_path_factory.mktemp("generic")))
    try:
        api = procs.api({"TURNKEEP_TOKENS": json.dumps(tokens)})
        procs.worker(concurrency=2)
        procs.beat()
        yield api.url, {"Authorization": f"Bearer {token}"}, tenant
    except BaseException:
        print(procs.dump_logs())
        raise
    finally:
        procs.stop_all()


def _send(url: str, message: dict[str, str], secret: str = INBOUND) -> httpx.Response:
    body = json.dumps(message).encode()
    headers = {
        "Content-Type": "application/json",
        "Turnkeep-Signature": webhooks.sign(secret, body),
    }
    return httpx.post(f"{url}/bridges/generic/messages", content=body, headers=headers, timeout=10)


def test_a_signed_message_is_one_turn_and_its_reply_a_signed_webhook_naming_the_thread(
    served: tuple[str, dict[str, str], str], store: Store
) -> None:
    url, admin, tenant = served
    user, thread = f"u-{uuid.uuid4().hex[:6]}", f"th-{uuid.uuid4().hex[:6]}"
    with Receiver(["503"]) as rx:
        binding = {
            "bridge": "generic",
            "workspace": "acme",
            "channel": "support",
            "user": user,
            "agent": "counter",
            "reply_url": rx.url,
        }
        r = httpx.post(f"{url}/v1/bridges/bindings", json=binding, headers=admin, timeout=10)
        assert r.status_code == 201, r.text
        message = {
            "workspace": "acme",
            "channel": "support",
            "thread": thread,
            "user": user,
            "message_id": "m-1",
            "text": "steps=1",
        }
        assert _send(url, message, secret="forged").status_code == 401
        first, again = _send(url, message), _send(url, message)
        sid, tid = session_id(GENERIC, "acme", "support", thread), turn_id(GENERIC, "acme", "m-1")
        assert first.json() == {"ok": True, "turn_id": tid, "created": True}
        assert again.json() == {"ok": True, "turn_id": tid, "created": False}

        def delivered() -> object:
            wh = store.outbox.get_webhook(tenant, sid, tid)
            return wh if wh is not None and wh.delivered else None

        webhook = wait_for(delivered, 60, interval=0.05, what="the reply delivered")
        got = rx.deliveries()

    # the 503 was retried; each attempt signed with the outbound secret, one delivery id
    assert [d.answered for d in got] == ["503", "200"]
    assert {d.headers["turnkeep-delivery"] for d in got} == {webhook.delivery_id}  # type: ignore[attr-defined]
    assert all(webhooks.verify(OUTBOUND, d.body, d.headers["turnkeep-signature"]) for d in got)
    reply = json.loads(got[-1].body)
    turn = store.reads.get_turn(tenant, sid, tid)
    assert turn.state is TurnState.COMPLETED and turn.submitted_by == f"generic.{user}"
    assert reply["thread"] == {"workspace": "acme", "channel": "support", "thread": thread}
    assert (reply["session_id"], reply["turn_id"], reply["state"]) == (sid, tid, "completed")
    assert reply["result"] == turn.result
    assert [t.turn_id for t in store.reads.list_turns(tenant, sid)] == [tid]


def test_an_unbound_sender_admits_nothing(
    served: tuple[str, dict[str, str], str], store: Store
) -> None:
    url, _, tenant = served
    message = {
        "workspace": "acme",
        "channel": "support",
        "thread": "th-x",
        "user": "nobody",
        "message_id": "m-9",
        "text": "hello",
    }
    assert _send(url, message).json() == {"ok": False, "refused": "unbound"}
    with pytest.raises(NotFound):
        store.reads.get_session(tenant, session_id(GENERIC, "acme", "support", "th-x"))
    r = httpx.post(
        f"{url}/bridges/generic/messages",
        content=b"{}",
        headers={"Turnkeep-Signature": webhooks.sign(INBOUND, b"{}")},
        timeout=10,
    )
    assert r.status_code == 422


def test_a_thread_whose_session_was_deleted_admits_nothing(
    served: tuple[str, dict[str, str], str], store: Store
) -> None:
    """docs/erasure.md: the bridge answers a message of a deleted session's thread as
    refused (``session_deleted``), a new one and a redelivered one alike, and never
    re-creates the session."""
    url, admin, tenant = served
    user, thread = f"u-{uuid.uuid4().hex[:6]}", f"th-{uuid.uuid4().hex[:6]}"
    with Receiver([]) as rx:
        binding = {
            "bridge": "generic",
            "workspace": "acme",
            "channel": "support",
            "user": user,
            "agent": "counter",
            "reply_url": rx.url,
        }
        r = httpx.post(f"{url}/v1/bridges/bindings", json=binding, headers=admin, timeout=10)
        assert r.status_code == 201, r.text
        message = {"workspace": "acme", "channel": "support", "thread": thread, "user": user}
        first = {**message, "message_id": "m-1", "text": "steps=1"}
        assert _send(url, first).json()["ok"] is True
        sid = session_id(GENERIC, "acme", "support", thread)
        deleted = httpx.delete(f"{url}/v1/sessions/{sid}", headers=admin, timeout=10)
        assert deleted.status_code == 202, deleted.text
        for again in (first, {**message, "message_id": "m-2", "text": "hello?"}):
            assert _send(url, again).json() == {"ok": False, "refused": "session_deleted"}

        def erased() -> bool:
            gone = store.reads.get_tombstone(tenant, sid)
            return gone is not None and gone.erased

        wait_for(erased, 60, what="the thread's session erased")
        assert _send(url, {**message, "message_id": "m-3", "text": "x"}).json() == {
            "ok": False,
            "refused": "session_deleted",
        }
    with pytest.raises(NotFound):
        store.reads.get_session(tenant, sid)
