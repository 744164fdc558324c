"""The Slack bridge end to end (docs/bridges.md): Slack's real wire both ways against
the API, real Celery workers and beat. ``tests/slack_server.py`` is Slack: it signs
Events API requests with the signing secret and serves ``chat.postMessage``,
``conversations.replies`` and ``chat.postEphemeral`` for the bot token.

Each test binds fresh users in a fresh channel (the bindings admin API), so the
module's processes serve them all."""

from __future__ import annotations

import json
import random
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from tests.conftest import WORKER_ENV
from tests.procs import Procs, wait_for
from tests.slack_server import EventSender, FakeSlack
from turnkeep.api.auth import token_digest
from turnkeep.runtime.bridges import SLACK, InboundMessage, session_id, slack, turn_id
from turnkeep.runtime.states import EventType, TurnState
from turnkeep.store.errors import NotFound
from turnkeep.store.facade import Store

SIGNING = "slack-signing-" + uuid.uuid4().hex
BOT = "xoxb-" + uuid.uuid4().hex
TEAM = "T0BRIDGE"


@dataclass
class World:
    api: str
    admin: dict[str, str]
    member: dict[str, str]
    tenant: str
    slack: FakeSlack
    sender: EventSender
    store: Store

    def bind(
        self, user: str, channel: str, agent: str = "counter", **kw: object
    ) -> dict[str, object]:
        body = {
            "bridge": "slack",
            "workspace": TEAM,
            "channel": channel,
            "user": user,
            "agent": agent,
            **kw,
        }
        r = httpx.post(f"{self.api}/v1/bridges/bindings", json=body, headers=self.admin, timeout=10)
        assert r.status_code == 201, r.text
        return dict(r.json())

    def turn(self, channel: str, thread: str, ts: str) -> tuple[str, str]:
        return session_id(SLACK, TEAM, channel, thread), turn_id(SLACK, TEAM, f"{channel}:{ts}")

    def settled(self, sid: str, tid: str, timeout: float = 60) -> object:
        def done() -> object:
            turn = self.store.reads.get_turn(self.tenant, sid, tid)
            return turn if turn.state.terminal else None

        return wait_for(done, timeout, interval=0.05, what=f"turn {tid} terminal")

    def delivered(self, sid: str, tid: str, timeout: float = 60) -> object:
        def done() -> object:
            wh = self.store.outbox.get_webhook(self.tenant, sid, tid)
            return wh if wh is not None and wh.delivered else None

        return wait_for(done, timeout, interval=0.05, what=f"reply of {tid} recorded")


@pytest.fixture(scope="module")
def world(
    service_env: dict[str, str],
    store: Store,
    effects_tables: None,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[World]:
    tenant = f"t-{uuid.uuid4().hex[:8]}"
    admin_token, member_token = f"adm-{uuid.uuid4().hex}", f"mem-{uuid.uuid4().hex}"
    tokens = [
        {"sha256": token_digest(admin_token), "tenant": tenant, "subject": "ops", "role": "admin"},
        {"sha256": token_digest(member_token), "tenant": tenant, "subject": "mia"},
    ]
    with FakeSlack(BOT) as fake:
        env = {
            **service_env,
            **WORKER_ENV,
            "TURNKEEP_SLACK_SIGNING_SECRET": SIGNING,
            "TURNKEEP_SLACK_WORKSPACES": json.dumps({TEAM: tenant}),
            "TURNKEEP_SLACK_BOT_TOKEN": BOT,
            "TURNKEEP_SLACK_API_URL": fake.api_url,
            "TURNKEEP_WEBHOOK_INTERVAL": "0.3",
            "TURNKEEP_WEBHOOK_BACKOFF": "0.2",
            "TURNKEEP_WEBHOOK_TIMEOUT": "2",
        }
        procs = Procs(env=env, logdir=Path(tmp_path_factory.mktemp("slack")))
        try:
            api = procs.api({"TURNKEEP_TOKENS": json.dumps(tokens)})
            procs.worker(concurrency=4)
            procs.beat()
            yield World(
                api.url,
                {"Authorization": f"Bearer {admin_token}"},
                {"Authorization": f"Bearer {member_token}"},
                tenant,
                fake,
                EventSender(api.url, SIGNING, TEAM),
                store,
            )
        except BaseException:
            print(procs.dump_logs())
            raise
        finally:
            procs.stop_all()


def _ids() -> tuple[str, str, str]:
    """A fresh user, channel and message ts."""
    tag = uuid.uuid4().hex[:8].upper()
    return f"U{tag}", f"C{tag}", f"{random.randrange(10**9, 2 * 10**9)}.000100"


def test_the_url_check_is_answered_and_a_bad_or_stale_signature_admits_nothing(
    world: World,
) -> None:
    code = "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P"  # Slack's documented example
    challenge = {"type": "url_verification", "token": "x", "challenge": code}
    (ok,) = world.sender.send(json.dumps(challenge).encode())
    assert ok.status_code == 200
    assert ok.json() == {"challenge": code}

    user, channel, ts = _ids()
    world.bind(user, channel)
    body = world.sender.mention(user, channel, ts, "steps=1")
    forged = EventSender(world.api, "not-the-secret", TEAM).send(body)[0]
    stale = world.sender.send(body, at=int(time.time()) - 301)[0]
    unsigned = httpx.post(f"{world.api}/bridges/slack/events", content=body, timeout=10)
    for r in (forged, stale, unsigned):
        assert r.status_code == 401, r.text
        assert r.json()["code"] == "bridge_signature_invalid"
    sid, _ = world.turn(channel, ts, ts)
    with pytest.raises(NotFound):
        world.store.reads.get_session(world.tenant, sid)
    assert not world.slack.posts() or all(
        c.args.get("channel") != channel for c in world.slack.posts()
    )


def test_a_mention_delivered_three_times_is_one_turn_and_one_reply_after_a_500(
    world: World,
) -> None:
    user, channel, ts = _ids()
    world.bind(user, channel)
    world.slack.script.append("500")  # Slack's first answer to the reply's post
    body = world.sender.mention(user, channel, ts, "steps=2")
    answers = world.sender.send(body, retries=(None, 1, 2))
    assert [r.status_code for r in answers] == [200, 200, 200]
    # answered well within Slack's 3 s: the turn runs after the answer
    assert all(r.elapsed.total_seconds() < 1.5 for r in answers), [r.elapsed for r in answers]
    sid, tid = world.turn(channel, ts, ts)
    assert [r.json() for r in answers] == [
        {"ok": True, "turn_id": tid, "created": True},
        {"ok": True, "turn_id": tid, "created": False},
        {"ok": True, "turn_id": tid, "created": False},
    ]
    turn = world.settled(sid, tid)
    assert turn.state is TurnState.COMPLETED  # type: ignore[attr-defined]
    assert [t.turn_id for t in world.store.reads.list_turns(world.tenant, sid)] == [tid]
    assert turn.submitted_by == f"slack.{user}"  # type: ignore[attr-defined]
    webhook = world.delivered(sid, tid)

    # one message in the thread, keyed by the row's delivery id, saying the turn's answer
    key = webhook.delivery_id  # type: ignore[attr-defined]
    (message,) = world.slack.keyed(key)
    assert message["text"] == turn.result["text"]  # type: ignore[attr-defined]
    assert world.slack.messages(channel, ts) == [message]
    posts = [c for c in world.slack.posts() if c.args["channel"] == channel]
    assert [c.answered for c in posts] == ["500", "ok"]
    assert all(c.token == BOT and c.args["thread_ts"] == ts for c in posts)
    # the retry looked in the thread first: the failed attempt had posted nothing
    looks = [c for c in world.slack.of("conversations.replies") if c.args["channel"] == channel]
    assert len(looks) == 1 and looks[0].args["include_all_metadata"] == "true"
    assert webhook.attempts == 2  # type: ignore[attr-defined]

    # Slack sends the bot's own reply back as an event, and later an edit: both ignored
    echo = world.sender.envelope(
        {"type": "message", "user": "UBOT", "bot_id": "B0", "channel": channel,
         "ts": message["ts"], "thread_ts": ts, "text": message["text"]}
    )  # fmt: skip
    edit = world.sender.envelope(
        {"type": "message", "subtype": "message_changed", "channel": channel,
         "ts": f"{ts[:-3]}999", "thread_ts": ts, "message": {"user": user, "text": "steps=3"}}
    )  # fmt: skip
    for ignored in (echo, edit):
        (r,) = world.sender.send(ignored)
        assert r.status_code == 200 and "ignored" in r.json(), r.text
    assert [t.turn_id for t in world.store.reads.list_turns(world.tenant, sid)] == [tid]


def test_two_messages_of_a_thread_run_in_order_while_another_thread_runs(world: World) -> None:
    user, channel, ts = _ids()
    world.bind(user, channel, agent="payer")
    # thread A: a payment waiting for approval, then a second message in the same thread
    world.sender.send(world.sender.mention(user, channel, ts, "pay"))
    sid_a, first = world.turn(channel, ts, ts)

    def waiting() -> object:
        return world.store.reads.get_turn(world.tenant, sid_a, first).state is TurnState.WAITING

    wait_for(waiting, 60, interval=0.05, what="the first turn waits for approval")
    reply_ts = f"{ts[:-3]}200"
    world.sender.send(world.sender.reply(user, channel, reply_ts, "and again", thread=ts))
    _, second = world.turn(channel, ts, reply_ts)
    # thread B, same channel and user, is another session: it is not held up by thread A
    other = f"{ts[:-3]}300"
    world.sender.send(world.sender.mention(user, channel, other, "pay too"))
    sid_b, third = world.turn(channel, other, other)
    assert sid_b != sid_a
    b_turn = world.store.reads.get_turn(world.tenant, sid_b, third)
    assert b_turn.agent_name == "payer"
    wait_for(
        lambda: world.store.reads.get_turn(world.tenant, sid_b, third).state is TurnState.WAITING,
        60,
        interval=0.05,
        what="thread B's turn ran while thread A's waits",
    )
    assert world.store.reads.get_turn(world.tenant, sid_a, second).state is TurnState.QUEUED

    # the bound user approves thread A's payment with the button: A's turns then run in order
    pending = world.store.reads.get_turn(world.tenant, sid_a, first).pending_input
    assert pending is not None
    value = slack.button_value(sid_a, first, pending.request_id)
    pressed = world.sender.press(user, channel, value)
    assert pressed.status_code == 200 and pressed.json()["ok"] is True, pressed.text
    assert world.settled(sid_a, first).state is TurnState.COMPLETED  # type: ignore[attr-defined]
    # the second message is a turn of the same session, after the first (the lane's order)
    turns = world.store.reads.list_turns(world.tenant, sid_a)
    assert [t.turn_id for t in turns] == [first, second]
    wait_for(
        lambda: world.store.reads.get_turn(world.tenant, sid_a, second).state is TurnState.WAITING,
        60,
        interval=0.05,
        what="the second turn runs after the first",
    )
    events, _ = world.store.reads.list_events(world.tenant, sid_a, after=0, limit=1000)
    order = [
        (e.turn_id, e.type)
        for e in events
        if e.type in (EventType.TURN_STARTED, EventType.TURN_COMPLETED)
    ]
    assert order.index((first, EventType.TURN_COMPLETED)) < order.index(
        (second, EventType.TURN_STARTED)
    )


def test_only_the_bound_participant_may_press_the_approval_button(world: World) -> None:
    user, channel, ts = _ids()
    stranger, _, _ = _ids()
    world.bind(user, channel, agent="payer")
    world.bind(stranger, channel, agent="payer")  # bound too, but not who asked
    world.sender.send(world.sender.mention(user, channel, ts, "pay"))
    sid, tid = world.turn(channel, ts, ts)
    wait_for(
        lambda: world.store.reads.get_turn(world.tenant, sid, tid).pending_input,
        60,
        interval=0.05,
        what="approval requested",
    )
    pending = world.store.reads.get_turn(world.tenant, sid, tid).pending_input
    assert pending is not None

    # the thread is asked, with two buttons naming the request
    def prompts(s: FakeSlack) -> list[dict[str, object]]:
        return [m for m in s.messages(channel, ts) if m.get("blocks")]

    (prompt,) = world.slack.wait(prompts, what="the approval prompt")
    buttons = prompt["blocks"][1]["elements"]  # type: ignore[index]
    assert [b["action_id"] for b in buttons] == [slack.APPROVE, slack.DENY]
    value = buttons[1]["value"]
    assert json.loads(value) == {"s": sid, "t": tid, "r": pending.request_id}
    assert "*pay*" in str(prompt["text"]) and '{"amount": 9}' in str(prompt["text"])

    prompt_ts = str(prompt["ts"])
    other = world.sender.press(stranger, channel, value, message_ts=prompt_ts, thread_ts=ts)
    unbound = world.sender.press("UNOBODY", channel, value, message_ts=prompt_ts)
    assert other.json() == {"ok": False, "refused": "input_forbidden"}
    assert unbound.json() == {"ok": False, "refused": "not_found"}

    def told(who: str) -> list[object]:
        return [c for c in world.slack.of("chat.postEphemeral") if c.args["user"] == who]

    world.slack.wait(lambda s: told(stranger) and told("UNOBODY"), what="the presses refused")
    (refusal,) = told(stranger)
    assert "Only the person" in refusal.args["text"]  # type: ignore[attr-defined]
    assert refusal.args["thread_ts"] == ts  # type: ignore[attr-defined]
    assert world.store.reads.get_turn(world.tenant, sid, tid).state is TurnState.WAITING
    # a forged press is refused before anything is looked up
    forged = EventSender(world.api, "forged", TEAM).press(user, channel, value)
    assert forged.status_code == 401
    assert world.store.reads.get_turn(world.tenant, sid, tid).state is TurnState.WAITING

    denied = world.sender.press(user, channel, value, approve=False, message_ts=prompt_ts)
    assert denied.json()["ok"] is True
    turn = world.settled(sid, tid)
    events = world.store.reads.turn_events(world.tenant, sid, tid)
    (resolved,) = [e for e in events if e.type == EventType.INPUT_RESOLVED]
    assert resolved.data["response"]["approved"] is False
    assert resolved.data["by"] == f"slack.{user}"
    assert turn.state is TurnState.COMPLETED  # type: ignore[attr-defined]
    # the thread holds the prompt once (the pass ran many times meanwhile) and the reply
    webhook = world.delivered(sid, tid)
    (reply,) = world.slack.keyed(webhook.delivery_id)  # type: ignore[attr-defined]
    # the prompt now says who answered, its buttons gone (updated in place)
    world.slack.wait(lambda s: s.messages(channel, ts)[0]["text"].startswith("Denied"))
    asked, answered = world.slack.messages(channel, ts)
    assert answered == reply and asked["ts"] == prompt_ts
    assert asked["text"] == f"Denied by <@{user}>."
    assert all(b["type"] != "actions" for b in asked["blocks"])


def test_an_unbound_or_revoked_sender_is_told_once_and_admits_nothing(world: World) -> None:
    user, channel, ts = _ids()
    body = world.sender.mention(user, channel, ts, "steps=1")
    answers = world.sender.send(body, retries=(None, 1))
    assert [r.json() for r in answers] == [{"ok": False, "refused": "unbound"}] * 2
    sid, _ = world.turn(channel, ts, ts)
    with pytest.raises(NotFound):
        world.store.reads.get_session(world.tenant, sid)

    def told() -> list[object]:
        return [c for c in world.slack.of("chat.postEphemeral") if c.args["user"] == user]

    # chatter of an unbound user in some thread, not addressing the bot: not answered
    (chatter,) = world.sender.send(
        world.sender.reply(user, channel, f"{ts[:-3]}500", "hm", thread=ts)
    )
    assert chatter.json()["ok"] is True and "ignored" in chatter.json()

    (refusal,) = world.slack.wait(lambda s: told(), what="the refusal")
    assert refusal.args["channel"] == channel and refusal.args["thread_ts"] == ts  # type: ignore[attr-defined]
    assert "not bound" in refusal.args["text"]  # type: ignore[attr-defined]

    # bound, then revoked: the next message admits nothing again
    binding = world.bind(user, channel)
    r = httpx.delete(
        f"{world.api}/v1/bridges/bindings/{binding['binding_id']}", headers=world.admin, timeout=10
    )
    assert r.status_code == 200 and r.json()["revoked_at"] is not None
    later = f"{ts[:-3]}900"
    (again,) = world.sender.send(world.sender.mention(user, channel, later, "steps=1"))
    assert again.json() == {"ok": False, "refused": "unbound"}
    with pytest.raises(NotFound):
        world.store.reads.get_session(world.tenant, world.turn(channel, later, later)[0])
    assert (
        len(world.slack.wait(lambda s: len(told()) == 2 and told(), what="the second refusal")) == 2
    )


def test_bindings_are_an_admins_and_a_sender_is_bound_once(world: World) -> None:
    user, channel, _ = _ids()
    body = {
        "bridge": "slack",
        "workspace": TEAM,
        "channel": channel,
        "user": user,
        "agent": "counter",
    }
    r = httpx.post(f"{world.api}/v1/bridges/bindings", json=body, headers=world.member, timeout=10)
    assert r.status_code == 403 and r.json()["code"] == "forbidden_role"
    created = world.bind(user, channel, subject="ursula", role="admin")
    assert (created["subject"], created["role"], created["created_by"]) == (
        "ursula",
        "admin",
        "ops",
    )
    r = httpx.post(f"{world.api}/v1/bridges/bindings", json=body, headers=world.admin, timeout=10)
    assert r.status_code == 409 and r.json()["code"] == "binding_taken"
    listed = httpx.get(f"{world.api}/v1/bridges/bindings", headers=world.admin, timeout=10).json()
    assert created in listed["bindings"]
    bad = {**body, "user": "U2", "agent": "no-such-agent"}
    r = httpx.post(f"{world.api}/v1/bridges/bindings", json=bad, headers=world.admin, timeout=10)
    assert r.status_code == 422 and r.json()["code"] == "unknown_agent"


def test_the_cli_binds_lists_and_revokes(world: World) -> None:
    import subprocess
    import sys

    turnkeep = str(Path(sys.executable).with_name("turnkeep"))
    token = world.admin["Authorization"].removeprefix("Bearer ")
    user, channel, ts = _ids()

    def cli(*args: str) -> object:
        run = subprocess.run(
            [turnkeep, "--url", world.api, "--token", token, "--json", "bindings", *args],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert run.returncode == 0, run.stderr
        return json.loads(run.stdout)

    made = cli("add", "slack", TEAM, "*", user, "--agent", "counter")
    assert isinstance(made, dict)
    assert (made["channel"], made["subject"], made["revoked_at"]) == ("*", f"slack.{user}", None)
    listed = cli("list")
    assert isinstance(listed, list) and made in listed
    # bound in every channel of the workspace: a mention anywhere admits a turn
    (r,) = world.sender.send(world.sender.mention(user, channel, ts, "steps=1"))
    assert r.json()["created"] is True
    revoked = cli("revoke", str(made["binding_id"]))
    assert isinstance(revoked, dict) and revoked["revoked_at"] is not None
    later = f"{ts[:-3]}900"
    (r,) = world.sender.send(world.sender.mention(user, channel, later, "steps=1"))
    assert r.json() == {"ok": False, "refused": "unbound"}


def _session(body: bytes) -> tuple[str, str]:
    """The session and turn an event's message derives (runtime/bridges)."""
    message = slack.parse_event(body)
    assert isinstance(message, InboundMessage)
    return message.session_id, message.turn_id


def test_the_same_ts_in_two_channels_is_two_sessions_each_replied_in_its_own_channel(
    world: World,
) -> None:
    # Slack's ts is unique within a channel only: two channels may hold threads of one ts
    user, first, ts = _ids()
    _, second, _ = _ids()
    world.bind(user, first)
    world.bind(user, second)
    sessions = []
    for channel, text in ((first, "steps=1"), (second, "steps=2")):
        body = world.sender.mention(user, channel, ts, text)
        (r,) = world.sender.send(body)
        sid, tid = _session(body)
        assert r.json() == {"ok": True, "turn_id": tid, "created": True}
        sessions.append((channel, sid, tid))
    assert sessions[0][1] != sessions[1][1]
    for channel, sid, tid in sessions:
        assert [t.turn_id for t in world.store.reads.list_turns(world.tenant, sid)] == [tid]
        turn = world.settled(sid, tid)
        webhook = world.delivered(sid, tid)
        (reply,) = world.slack.messages(channel, ts)
        assert reply["text"] == turn.result["text"]  # type: ignore[attr-defined]
        assert reply == world.slack.keyed(webhook.delivery_id)[0]  # type: ignore[attr-defined]


def test_the_replies_of_a_thread_arrive_in_the_order_of_its_turns(world: World) -> None:
    # each thread's first reply is refused twice by Slack (rate limited): its second
    # turn settles meanwhile, and its reply must still wait for the first's
    for _ in range(3):
        user, _, _ = _ids()
        world.bind(user, "*")
        threads = []
        for _ in range(4):
            _, channel, ts = _ids()
            world.slack.channel_script[channel] = ["ratelimited", "ratelimited"]
            first = world.sender.mention(user, channel, ts, "steps=1")
            second = world.sender.reply(user, channel, f"{ts[:-3]}200", "steps=1", thread=ts)
            for body in (first, second):
                (r,) = world.sender.send(body)
                assert r.json()["created"] is True, r.text
            threads.append((channel, ts, [_session(first), _session(second)]))
        for channel, ts, turns in threads:
            keys = [world.delivered(sid, tid).delivery_id for sid, tid in turns]  # type: ignore[attr-defined]
            posted = world.slack.messages(channel, ts)
            got = [m["metadata"]["event_payload"]["delivery_id"] for m in posted]
            assert got == keys, f"thread {channel}/{ts}: replies posted out of turn order"
