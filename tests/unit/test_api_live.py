"""The live feed's bounded backlog, against an in-memory pub/sub: a reader that keeps
up gets every payload in order; one that falls more than ``backlog`` behind gets
``Lagging`` and the channel is given up, so nothing buffers without limit."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from turnkeep.api.live import Lagging, LiveFeed


class PubSub:
    """What LiveFeed uses of redis.asyncio's PubSub."""

    def __init__(self) -> None:
        self.inbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.subscribed = False
        self.closed = False

    async def subscribe(self, channel: str) -> None:
        self.subscribed = True
        await self.inbox.put({"type": "subscribe", "channel": channel, "data": 1})

    async def unsubscribe(self) -> None:
        self.subscribed = False

    async def get_message(
        self, ignore_subscribe_messages: bool = False, timeout: float | None = 0.0
    ) -> dict[str, Any] | None:
        try:
            msg = await asyncio.wait_for(self.inbox.get(), timeout)
        except TimeoutError:
            return None
        if ignore_subscribe_messages and msg["type"] != "message":
            return None
        return msg

    async def aclose(self) -> None:
        self.closed = True

    def publish(self, n: int) -> None:
        data = json.dumps({"kind": "event", "event": {"seq": n}})
        self.inbox.put_nowait({"type": "message", "data": data})


class Client:
    def __init__(self) -> None:
        self.ps = PubSub()

    def pubsub(self) -> PubSub:
        return self.ps


async def _settle() -> None:
    for _ in range(50):
        await asyncio.sleep(0)


def test_a_reader_that_keeps_up_gets_every_payload_in_order() -> None:
    async def run() -> list[int]:
        client = Client()
        feed = await LiveFeed.open(client, "t", "s", backlog=3)  # type: ignore[arg-type]
        seen: list[int] = []
        for n in range(1, 31):
            client.ps.publish(n)
            if n % 3 == 0:  # never more than three waiting
                await _settle()
                while (payload := await feed.next(0.05)) is not None:
                    seen.append(payload["event"]["seq"])
        assert await feed.next(0.01) is None
        assert not feed.lagging and client.ps.subscribed
        await feed.close()
        assert client.ps.closed
        return seen

    assert asyncio.run(run()) == list(range(1, 31))


def test_a_reader_more_than_backlog_behind_is_lagging_and_the_channel_is_given_up() -> None:
    async def run() -> None:
        client = Client()
        feed = await LiveFeed.open(client, "t", "s", backlog=3)  # type: ignore[arg-type]
        for n in range(1, 4):
            client.ps.publish(n)
        await _settle()
        assert not feed.lagging  # three behind: still within the backlog
        for n in range(4, 50):
            client.ps.publish(n)
        await _settle()
        assert feed.lagging and not client.ps.subscribed
        # the buffer is dropped at once: what the reader missed is in the journal
        with pytest.raises(Lagging) as caught:
            await feed.next(1.0)
        assert caught.value.backlog == 3
        with pytest.raises(Lagging):
            await feed.next(0)
        await feed.close()
        await feed.close()  # idempotent
        assert client.ps.closed

    asyncio.run(run())


def test_next_times_out_and_a_channel_failure_follows_the_buffered_payloads() -> None:
    class Broken(PubSub):
        async def get_message(
            self, ignore_subscribe_messages: bool = False, timeout: float | None = 0.0
        ) -> dict[str, Any] | None:
            if ignore_subscribe_messages and self.inbox.empty():
                raise ConnectionError("gone")
            return await super().get_message(ignore_subscribe_messages, timeout)

    async def run() -> None:
        client = Client()
        client.ps = Broken()
        feed = await LiveFeed.open(client, "t", "s")  # type: ignore[arg-type]
        client.ps.publish(1)
        await _settle()
        assert (await feed.next(0.5) or {})["event"]["seq"] == 1
        with pytest.raises(ConnectionError):
            await feed.next(0.5)
        await feed.close()

    asyncio.run(run())
    empty = Client()

    async def quiet() -> None:
        feed = await LiveFeed.open(empty, "t", "s")  # type: ignore[arg-type]
        assert await feed.next(0.05) is None
        await feed.close()

    asyncio.run(quiet())
