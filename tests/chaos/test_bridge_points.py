"""SIGKILL of the worker that settles a Slack thread's turn and posts its reply:
right after the settling commit (the prompt delivery never sent: between settle and
post), after the claim (nothing posted), and after Slack answered ok (the post made,
never recorded). A new worker and beat deliver it anyway, and the thread holds the
reply exactly once: the retry after the post that was never recorded finds it by its
delivery id (``conversations.replies``) instead of posting it again."""

from __future__ import annotations

import json
import signal
import time
import uuid

import pytest

from tests.chaos.conftest import Chaos, signalled
from tests.procs import wait_for
from tests.slack_server import EventSender, FakeSlack
from turnkeep.runtime.bridges import SLACK, session_id, turn_id
from turnkeep.runtime.obs.faults import FaultPoint
from turnkeep.runtime.states import TurnState
from turnkeep.store.bridges import Sender

SIGNING = "slack-signing-" + uuid.uuid4().hex
BOT = "xoxb-" + uuid.uuid4().hex
TEAM = "T0CHAOS"
#: what the victim had posted when it died (the thread's replies of that delivery)
BEFORE_KILL = {
    FaultPoint.AFTER_SETTLE: 0,
    FaultPoint.BEFORE_DELIVERY: 0,
    FaultPoint.AFTER_DELIVERY: 1,
}


@pytest.mark.chaos
@pytest.mark.parametrize("point", list(BEFORE_KILL))
def test_sigkill_between_settle_and_post_still_posts_the_reply_once(
    chaos: Chaos, point: FaultPoint
) -> None:
    with FakeSlack(BOT) as fake:
        env = {
            "TURNKEEP_SLACK_SIGNING_SECRET": SIGNING,
            "TURNKEEP_SLACK_WORKSPACES": json.dumps({TEAM: chaos.tenant}),
            "TURNKEEP_SLACK_BOT_TOKEN": BOT,
            "TURNKEEP_SLACK_API_URL": fake.api_url,
            # a claim's lease is 3 x timeout + 5 s: a killed deliverer's runs out in 8 s
            "TURNKEEP_WEBHOOK_TIMEOUT": "1",
            "TURNKEEP_WEBHOOK_INTERVAL": "0.5",
            "TURNKEEP_WEBHOOK_BACKOFF": "0.3",
        }
        api = chaos.api(env)
        chaos.procs.beat(env)
        victim = chaos.procs.worker({**env, "TURNKEEP_FAULTS": f"{point.value}=kill-once"})
        user, channel = f"U{uuid.uuid4().hex[:8].upper()}", f"C{uuid.uuid4().hex[:8].upper()}"
        chaos.store.bridges.create_binding(
            chaos.tenant,
            Sender(SLACK, TEAM, channel, user),
            subject="slack.chaos",
            role="member",
            agent="counter",
            created_by="chaos",
        )
        ts = f"{int(time.time())}.000100"
        sender = EventSender(api.url, SIGNING, TEAM)
        (r,) = sender.send(sender.mention(user, channel, ts, "steps=1"))
        assert r.status_code == 200 and r.json()["created"] is True, r.text
        sid, tid = session_id(SLACK, TEAM, channel, ts), turn_id(SLACK, TEAM, f"{channel}:{ts}")
        chaos.accepted.append((chaos.tenant, sid, tid))
        wait_for(signalled(victim, signal.SIGKILL), 60, what=f"worker SIGKILLed at {point}")
        assert chaos.store.reads.get_turn(chaos.tenant, sid, tid).state is TurnState.COMPLETED
        webhook = chaos.store.outbox.get_webhook(chaos.tenant, sid, tid)
        assert webhook is not None and not webhook.delivered
        assert len(fake.keyed(webhook.delivery_id)) == BEFORE_KILL[point]

        chaos.procs.worker(env)

        def delivered() -> object:
            wh = chaos.store.outbox.get_webhook(chaos.tenant, sid, tid)
            return wh if wh is not None and wh.delivered else None

        webhook = wait_for(delivered, 40, interval=0.2, what="reply delivered")
        posted = [c for c in fake.posts() if c.args["channel"] == channel and c.answered == "ok"]
        looked = [c for c in fake.of("conversations.replies") if c.args["channel"] == channel]

    (message,) = fake.keyed(webhook.delivery_id)  # type: ignore[attr-defined]
    assert fake.messages(channel, ts) == [message]
    # one post in all, whoever made it; the one that died unrecorded was found, not redone
    assert len(posted) == 1
    if point is FaultPoint.AFTER_DELIVERY:
        assert looked, "the retry did not look for the reply it had posted"
    turn = chaos.store.reads.get_turn(chaos.tenant, sid, tid)
    assert message["text"] == turn.result["text"]  # type: ignore[index]
    assert chaos.check() == []


@pytest.mark.chaos
@pytest.mark.parametrize(
    "point",
    [FaultPoint.BEFORE_DELIVERY, FaultPoint.AFTER_DELIVERY, FaultPoint.AFTER_DELIVERY_RECORDED],
)
def test_sigkill_around_a_threads_first_reply_keeps_its_replies_in_turn_order(
    chaos: Chaos, point: FaultPoint
) -> None:
    # the thread's first reply: killed before its post, after Slack took it (unrecorded),
    # and after it was recorded but before the second (which waited for it) was claimed
    with FakeSlack(BOT) as fake:
        env = {
            "TURNKEEP_SLACK_SIGNING_SECRET": SIGNING,
            "TURNKEEP_SLACK_WORKSPACES": json.dumps({TEAM: chaos.tenant}),
            "TURNKEEP_SLACK_BOT_TOKEN": BOT,
            "TURNKEEP_SLACK_API_URL": fake.api_url,
            "TURNKEEP_WEBHOOK_TIMEOUT": "1",
            "TURNKEEP_WEBHOOK_INTERVAL": "0.5",
            "TURNKEEP_WEBHOOK_BACKOFF": "0.3",
        }
        api = chaos.api(env)
        chaos.procs.beat(env)
        victim = chaos.procs.worker({**env, "TURNKEEP_FAULTS": f"{point.value}=kill-once"})
        user, channel = f"U{uuid.uuid4().hex[:8].upper()}", f"C{uuid.uuid4().hex[:8].upper()}"
        chaos.store.bridges.create_binding(
            chaos.tenant,
            Sender(SLACK, TEAM, channel, user),
            subject="slack.chaos",
            role="member",
            agent="counter",
            created_by="chaos",
        )
        ts = f"{int(time.time())}.000100"
        later = f"{ts[:-3]}200"
        sender = EventSender(api.url, SIGNING, TEAM)
        for body in (
            sender.mention(user, channel, ts, "steps=1"),
            sender.reply(user, channel, later, "steps=1", thread=ts),
        ):
            (r,) = sender.send(body)
            assert r.status_code == 200 and r.json()["created"] is True, r.text
        sid = session_id(SLACK, TEAM, channel, ts)
        tids = [turn_id(SLACK, TEAM, f"{channel}:{m}") for m in (ts, later)]
        chaos.accepted.extend((chaos.tenant, sid, tid) for tid in tids)
        wait_for(signalled(victim, signal.SIGKILL), 60, what=f"worker SIGKILLed at {point}")
        chaos.procs.worker(env)

        def delivered() -> object:
            rows = [chaos.store.outbox.get_webhook(chaos.tenant, sid, tid) for tid in tids]
            return rows if all(w is not None and w.delivered for w in rows) else None

        rows = wait_for(delivered, 60, interval=0.2, what="both replies delivered")

    keys = [w.delivery_id for w in rows]  # type: ignore[attr-defined]
    posted = fake.messages(channel, ts)
    # each reply once, the first turn's first, whatever the kill interrupted
    assert [m["metadata"]["event_payload"]["delivery_id"] for m in posted] == keys
    assert chaos.check() == []
