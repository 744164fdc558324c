"""Chat bridges per tenant (docs/bridges.md "Workspaces and tenants"): an operator
assigns each Slack workspace, and the generic bridge's secret, to one tenant; a
tenant's admin binds people only inside what is assigned to it (another tenant's
workspace looks missing: 404), and an inbound message is looked up under its
workspace's tenant first, so it never becomes another tenant's turn.

Two tenants against one API (admission is what is proved: no worker needed)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import psycopg
import pytest

from tests.conftest import WORKER_ENV
from tests.procs import Procs
from tests.slack_server import EventSender
from turnkeep.api.auth import token_digest
from turnkeep.runtime import webhooks
from turnkeep.runtime.bridges import InboundMessage, generic, slack
from turnkeep.store.errors import NotFound
from turnkeep.store.facade import Store

SIGNING = "slack-signing-" + uuid.uuid4().hex
GENERIC_SECRET = "bridge-in-" + uuid.uuid4().hex
TEAM_A, TEAM_B = "T0ACME", "T0GLOBEX"


@dataclass
class Two:
    api: str
    a: str
    b: str
    admin_a: dict[str, str]
    admin_b: dict[str, str]

    def bind(self, admin: dict[str, str], **body: object) -> httpx.Response:
        body = {"bridge": "slack", "agent": "counter", **body}
        return httpx.post(f"{self.api}/v1/bridges/bindings", json=body, headers=admin, timeout=10)


@pytest.fixture(scope="module")
def two(
    service_env: dict[str, str], effects_tables: None, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Two]:
    a, b = f"ta-{uuid.uuid4().hex[:8]}", f"tb-{uuid.uuid4().hex[:8]}"
    token_a, token_b = f"adm-{uuid.uuid4().hex}", f"adm-{uuid.uuid4().hex}"
    tokens = [
        {"sha256": token_digest(token_a), "tenant": a, "subject": "ops", "role": "admin"},
        {"sha256": token_digest(token_b), "tenant": b, "subject": "ops", "role": "admin"},
    ]
    env = {
        **service_env,
        **WORKER_ENV,  # the test agents
        "TURNKEEP_SLACK_SIGNING_SECRET": SIGNING,
        "TURNKEEP_SLACK_WORKSPACES": json.dumps({TEAM_A: a, TEAM_B: b}),
        "TURNKEEP_BRIDGE_SECRET": GENERIC_SECRET,
        "TURNKEEP_BRIDGE_TENANT": a,
        # the generic bridge replies by a signed webhook: admitting one needs its secret
        "TURNKEEP_WEBHOOK_SECRET": "whsec-" + uuid.uuid4().hex,
    }
    procs = Procs(env=env, logdir=Path(tmp_path_factory.mktemp("tenancy")))
    try:
        api = procs.api({"TURNKEEP_TOKENS": json.dumps(tokens)})
        yield Two(
            api.url,
            a,
            b,
            {"Authorization": f"Bearer {token_a}"},
            {"Authorization": f"Bearer {token_b}"},
        )
    except BaseException:
        print(procs.dump_logs())
        raise
    finally:
        procs.stop_all()


def test_a_tenant_binds_only_in_its_workspaces_and_another_tenants_user_stays_theirs(
    two: Two, store: Store
) -> None:
    tag = uuid.uuid4().hex[:8].upper()
    user, channel, ts = f"U{tag}", f"C{tag}", "1767225600.000100"
    # B binds its own user in every channel of its workspace
    r = two.bind(two.admin_b, workspace=TEAM_B, channel="*", user=user)
    assert r.status_code == 201, r.text
    # A's admin tries to bind B's user on one channel (which would win over B's '*'),
    # and a workspace nobody was assigned: both look missing, nothing is written
    for workspace in (TEAM_B, "T0NOBODY"):
        r = two.bind(two.admin_a, workspace=workspace, channel=channel, user=user)
        assert r.status_code == 404, r.text
        assert r.json()["code"] == "bridge_workspace_not_found"
    listed = httpx.get(f"{two.api}/v1/bridges/bindings", headers=two.admin_a, timeout=10)
    assert listed.json()["bindings"] == []

    # the user's mention in B's workspace is B's turn, never A's
    sender = EventSender(two.api, SIGNING, TEAM_B)
    body = sender.mention(user, channel, ts, "steps=1")
    message = slack.parse_event(body)
    assert isinstance(message, InboundMessage)
    (r,) = sender.send(body)
    assert r.json() == {"ok": True, "turn_id": message.turn_id, "created": True}
    turn = store.reads.get_turn(two.b, message.session_id, message.turn_id)
    assert turn.submitted_by == f"slack.{user}"
    with pytest.raises(NotFound):
        store.reads.get_session(two.a, message.session_id)

    # the same user id in A's workspace is another person: unbound there
    (r,) = EventSender(two.api, SIGNING, TEAM_A).send(
        EventSender(two.api, SIGNING, TEAM_A).mention(user, channel, ts, "steps=1")
    )
    assert r.json() == {"ok": False, "refused": "unbound"}
    # an event of a workspace no tenant was assigned admits nothing
    stray = EventSender(two.api, SIGNING, "T0NOBODY")
    (r,) = stray.send(stray.mention(user, channel, ts, "steps=1"))
    assert r.json() == {"ok": False, "refused": "workspace_unassigned"}


def _signed(url: str, message: dict[str, str]) -> httpx.Response:
    raw = json.dumps(message).encode()
    headers = {
        "Content-Type": "application/json",
        generic.SIGNATURE_HEADER: webhooks.sign(GENERIC_SECRET, raw),
    }
    return httpx.post(f"{url}/bridges/generic/messages", content=raw, headers=headers, timeout=10)


def test_the_generic_secret_signs_for_its_tenant_only(two: Two, store: Store) -> None:
    user = f"u-{uuid.uuid4().hex[:8]}"
    where = {"workspace": "acme", "channel": "support", "user": user}
    reply = {"bridge": "generic", "reply_url": "https://example.com/reply"}
    # B's admin cannot bind a sender of a bridge whose secret is A's
    r = two.bind(two.admin_b, **where, **reply)
    assert r.status_code == 404 and r.json()["code"] == "bridge_workspace_not_found", r.text
    r = two.bind(two.admin_a, **where, **reply)
    assert r.status_code == 201, r.text

    sent = {**where, "thread": "th-1", "message_id": f"m-{user}", "text": "steps=1"}
    r = _signed(two.api, sent)
    parsed = generic.parse(json.dumps(sent).encode())
    assert parsed is not None
    assert r.json() == {"ok": True, "turn_id": parsed.turn_id, "created": True}
    assert store.reads.get_turn(two.a, parsed.session_id, parsed.turn_id).submitted_by == (
        f"generic.{user}"
    )
    with pytest.raises(NotFound):
        store.reads.get_session(two.b, parsed.session_id)


def test_a_binding_left_in_a_workspace_now_anothers_neither_holds_nor_reveals_its_sender(
    two: Two, database_url: str
) -> None:
    """A binding B made before T0ACME was assigned to A (written here as the owner, as
    the API no longer can) holds nothing in A: A binds that sender as any other, and
    its messages are A's turns (the one live binding per sender is per tenant)."""
    tag = uuid.uuid4().hex[:8].upper()
    user, channel = f"U{tag}", f"C{tag}"
    with psycopg.connect(database_url.replace("+psycopg", ""), autocommit=True) as c:
        c.execute(
            "INSERT INTO bridge_bindings (tenant_id, binding_id, bridge, workspace, channel,"
            " user_id, subject, role, agent, created_by)"
            " VALUES (%s, %s, 'slack', %s, %s, %s, 'old', 'member', 'counter', 'ops')",
            (two.b, f"bnd_{tag.lower()}", TEAM_A, channel, user),
        )
    r = two.bind(two.admin_a, workspace=TEAM_A, channel=channel, user=user)
    assert r.status_code == 201, r.text
    sender = EventSender(two.api, SIGNING, TEAM_A)
    body = sender.mention(user, channel, "1767225601.000200", "steps=1")
    message = slack.parse_event(body)
    assert isinstance(message, InboundMessage)
    (r,) = sender.send(body)
    assert r.json() == {"ok": True, "turn_id": message.turn_id, "created": True}
