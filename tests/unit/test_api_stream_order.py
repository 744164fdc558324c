"""The SSE stream's ordering rules, against an in-memory journal and channel:
duplicates are skipped, gaps are filled from the journal, deltas are never numbered;
a lagging reader's stream ends with ``stream.resume``, one the retention cut passed
with ``stream.resync_required``."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

from turnkeep.api.live import Lagging
from turnkeep.api.sse import SessionStream, delta_frame, event_frame
from turnkeep.store.errors import ResyncRequired
from turnkeep.store.records import EventPageRecord, EventRecord


def ev(seq: int) -> EventRecord:
    return EventRecord(
        "ten",
        "s",
        seq,
        "t1",
        "model.completed",
        seq,
        1,
        {"n": seq},
        datetime(2024, 1, 1, tzinfo=UTC),
    )


class Journal:
    def __init__(self, head: int, earliest: int = 1) -> None:
        self.head = head
        self.earliest = earliest

    def event_page(
        self, tenant_id: str, session_id: str, *, after: int, limit: int
    ) -> EventPageRecord:
        if after + 1 < self.earliest:
            raise ResyncRequired(after, self.earliest, self.head)
        events = [ev(s) for s in range(after + 1, min(self.head, after + limit) + 1)]
        return EventPageRecord(events=events, head_seq=self.head, earliest_seq=self.earliest)


class Feed:
    def __init__(self, payloads: list[dict[str, Any] | Exception]) -> None:
        self.payloads = payloads
        self.closed = False

    async def next(self, timeout: float) -> dict[str, Any] | None:
        if self.payloads:
            payload = self.payloads.pop(0)
            if isinstance(payload, Exception):
                raise payload
            return payload
        await asyncio.sleep(min(timeout, 0.01))
        return None

    async def close(self) -> None:
        self.closed = True


def live(seq: int) -> dict[str, Any]:
    return {"kind": "event", "event": ev(seq).to_json()}


async def collect(stream: SessionStream, n: int) -> list[str]:
    out: list[str] = []
    frames: AsyncIterator[str] = stream.frames()
    async for frame in frames:
        out.append(frame)
        if len([f for f in out if f.startswith("id:")]) >= n:
            break
    await frames.aclose()  # type: ignore[attr-defined]
    return out


def test_replay_then_live_without_gap_or_duplicate() -> None:
    journal = Journal(head=3)
    feed = Feed(
        [
            live(2),
            live(3),
            {"kind": "delta", "turn_id": "t1", "step": 4, "text": "h"},
            live(4),
            live(7),
            live(5),
            live(8),
        ]
    )

    async def run() -> list[str]:
        stream = SessionStream(
            read_page=journal.event_page,
            feed=feed,
            tenant_id="ten",  # type: ignore[arg-type]
            session_id="s",
            cursor=1,
            first=[ev(2), ev(3)],
            heartbeat=60,
        )
        journal.head = 8  # 4..8 committed meanwhile; 6's publish was lost
        return await collect(stream, 7)

    frames = asyncio.run(run())
    ids = [int(f.split("\n")[0][4:]) for f in frames if f.startswith("id:")]
    assert ids == [2, 3, 4, 5, 6, 7, 8]
    deltas = [f for f in frames if f.startswith("event: model.delta")]
    assert deltas == [delta_frame({"turn_id": "t1", "step": 4, "text": "h"})]
    assert frames[0] == event_frame(ev(2).to_json())
    assert feed.closed


def test_heartbeat_rereads_the_journal() -> None:
    journal = Journal(head=1)
    feed = Feed([])

    async def run() -> list[str]:
        stream = SessionStream(
            read_page=journal.event_page,
            feed=feed,
            tenant_id="ten",  # type: ignore[arg-type]
            session_id="s",
            cursor=0,
            first=[ev(1)],
            heartbeat=0.05,
        )
        journal.head = 2  # committed, never published
        return await collect(stream, 2)

    frames = asyncio.run(run())
    assert ": heartbeat earliest_seq=1\n\n" in frames
    assert frames[-1].startswith("id: 2\n")


def _stream(journal: Journal, feed: Feed, cursor: int, heartbeat: float = 60) -> SessionStream:
    return SessionStream(
        read_page=journal.event_page,
        feed=feed,  # type: ignore[arg-type]
        tenant_id="ten",
        session_id="s",
        cursor=cursor,
        first=[],
        heartbeat=heartbeat,
        earliest=journal.earliest,
    )


async def _all(stream: SessionStream) -> list[str]:
    return [frame async for frame in stream.frames()]


def test_a_lagging_reader_gets_a_final_resume_frame_with_its_last_seq() -> None:
    journal = Journal(head=7)  # 6 and 7 committed, then published
    feed = Feed([live(6), live(7), Lagging(3), live(8)])
    frames = asyncio.run(_all(_stream(journal, feed, 2)))
    ids = [int(f.split("\n")[0][4:]) for f in frames if f.startswith("id:")]
    assert ids == [3, 4, 5, 6, 7]  # nothing after the lag is sent, nothing before lost
    assert frames[-1] == 'event: stream.resume\ndata: {"reason":"lagging","after":7}\n\n'
    assert feed.closed and feed.payloads == [live(8)]


def test_a_reader_the_retention_cut_passed_gets_a_final_resync_frame() -> None:
    journal = Journal(head=9)
    feed = Feed([])

    async def run() -> list[str]:
        stream = _stream(journal, feed, 3, heartbeat=0.02)
        frames: list[str] = []
        async for frame in stream.frames():
            frames.append(frame)
            if frame.startswith("id: 9"):
                journal.head, journal.earliest = 20, 15  # pruned while it was away
        return frames

    frames = asyncio.run(run())
    ids = [int(f.split("\n")[0][4:]) for f in frames if f.startswith("id:")]
    assert ids == [4, 5, 6, 7, 8, 9]
    assert ": heartbeat earliest_seq=1\n\n" in frames
    assert frames[-1] == (
        'event: stream.resync_required\ndata: {"requested":9,"earliest":15,"latest":20}\n\n'
    )
    assert feed.closed
