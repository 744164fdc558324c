"""The live channel's messages (store/channel.py): a commit's events leave in one
``PUBLISH``, a worker's queued sends one message per session, and ``decode`` gives
subscribers the same messages in the same order as one publish each did."""

from __future__ import annotations

import threading
from datetime import UTC, datetime
from typing import Any

from turnkeep.store import channel
from turnkeep.store.keys import events_channel
from turnkeep.store.records import EventRecord


class FakeRedis:
    """Records each round trip: a publish, or a pipeline of them."""

    def __init__(self) -> None:
        self.trips: list[list[tuple[str, str]]] = []
        self.sent = threading.Event()

    def publish(self, ch: str, payload: str) -> None:
        self.trips.append([(ch, payload)])
        self.sent.set()

    def pipeline(self, transaction: bool = False) -> Any:
        fake, batch = self, []

        class Pipe:
            def publish(self, ch: str, payload: str) -> None:
                batch.append((ch, payload))

            def execute(self) -> None:
                fake.trips.append(list(batch))
                fake.sent.set()

        return Pipe()


def event(session: str, seq: int) -> EventRecord:
    return EventRecord("t", session, seq, "u", "turn.started", None, 1, {}, datetime.now(UTC))


def test_a_commits_events_are_one_publish_and_decode_in_order() -> None:
    fake = FakeRedis()
    channel.Publisher(fake).committed(event("s", 4), event("s", 5), event("s", 6))  # type: ignore[arg-type]
    assert len(fake.trips) == 1 and len(fake.trips[0]) == 1
    ch, payload = fake.trips[0][0]
    assert ch == events_channel("t", "s")
    assert [m["event"]["seq"] for m in channel.decode(payload)] == [4, 5, 6]


def test_one_message_alone_is_sent_as_it_is() -> None:
    fake = FakeRedis()
    channel.Publisher(fake).delta("t", "s", "u", 2, "hi")  # type: ignore[arg-type]
    ((_, payload),) = fake.trips[0]
    assert payload == channel.encode_delta("u", 2, "hi")
    assert channel.decode(payload) == [{"kind": "delta", "turn_id": "u", "step": 2, "text": "hi"}]


def test_one_message_per_session_each_in_its_order() -> None:
    got = channel.by_channel([("a", '{"n":1}'), ("b", '{"n":2}'), ("a", '{"n":3}')])
    assert [ch for ch, _ in got] == ["a", "b"]
    assert [m["n"] for m in channel.decode(got[0][1])] == [1, 3]
    assert channel.decode(got[1][1]) == [{"n": 2}]


def test_the_background_publisher_keeps_a_commit_whole_and_in_order() -> None:
    fake = FakeRedis()
    pub = channel.BackgroundPublisher(fake)  # type: ignore[arg-type]
    pub.delta("t", "s", "u", 1, "a")
    pub.committed(event("s", 2), event("s", 3))
    pub.committed(event("s2", 9))
    messages: list[list[dict[str, Any]]] = []
    by_session: dict[str, list[Any]] = {}
    while sum(len(m) for m in messages) < 4:
        assert fake.sent.wait(5)
        fake.sent.clear()
        trips, fake.trips = fake.trips, []
        for ch, payload in (pair for trip in trips for pair in trip):
            messages.append(channel.decode(payload))
            by_session.setdefault(ch, []).extend(
                m.get("text") or m["event"]["seq"] for m in messages[-1]
            )
    assert by_session == {events_channel("t", "s"): ["a", 2, 3], events_channel("t", "s2"): [9]}
    # a commit never straddles two messages
    assert any(
        [m["event"]["seq"] for m in msg if m["kind"] == "event"] == [2, 3] for msg in messages
    )
