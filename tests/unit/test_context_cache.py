"""The context cache's own logic (store/context_cache.py): a kept window extended by
the rows a start sent is the window the statement would have sent whole, and the
cache's bounds. Against the real statement: tests/integration/test_context_cache.py."""

from __future__ import annotations

from datetime import UTC, datetime

from hypothesis import given
from hypothesis import strategies as st

from turnkeep.store.context_cache import ContextCache, Window, WindowRow, extended, window_of
from turnkeep.store.records import EventRecord

NOW = datetime(2026, 12, 8, tzinfo=UTC)


def _row(seq: int, ordinal: int | None, size: int = 10, turn: str = "") -> WindowRow:
    data = {"message": {"role": "user", "content": f"m{seq}"}}
    event = EventRecord("t", "s", seq, turn or f"turn-{ordinal}", "tool.completed", 1, 1, data, NOW)
    return WindowRow(event, ordinal, size)


def _window(rows: list[WindowRow], floor: int, epoch: int = 1) -> Window:
    return Window(epoch=epoch, base_seq=None, floor=floor, rows=tuple(rows), decoded={})


def _whole(rows: list[WindowRow], window_rows: int, window_bytes: int) -> list[int]:
    """What the statement sends: the newest rows within both bounds, by turn then seq."""
    chosen, upto = [], 0
    for r in sorted(rows, key=lambda r: -r.event.seq)[:window_rows]:
        upto += r.size
        if upto > window_bytes:
            break
        chosen.append(r)
    chosen.sort(key=lambda r: (r.ordinal is None, r.ordinal or 0, r.event.seq))
    return [r.event.seq for r in chosen]


@given(
    sizes=st.lists(st.integers(1, 40), min_size=1, max_size=40),
    floor_at=st.integers(0, 40),
    window_rows=st.integers(1, 25),
    window_bytes=st.integers(1, 600),
)
def test_an_extended_window_is_the_one_read_whole(
    sizes: list[int], floor_at: int, window_rows: int, window_bytes: int
) -> None:
    # a turn per two rows, seq in turn order; the window was read with rows before
    # the floor only, then the start sent the rows from the floor on
    rows = [_row(seq, seq // 2, size) for seq, size in enumerate(sizes, start=1)]
    floor = min(floor_at, len(rows)) + 1
    before = [r for r in rows if r.event.seq < floor]
    kept = [r for r in rows if r.event.seq in set(_whole(before, window_rows, window_bytes))]
    after = rows[floor - 1 :]
    sent = [r for r in rows if r.event.seq in set(_whole(after, window_rows, window_bytes))]
    # what the statement says of them: they fill the window alone
    full = len(after) >= window_rows or sum(r.size for r in after) > window_bytes
    got = extended(
        _window(kept, floor), sent, full=full, window_rows=window_rows, window_bytes=window_bytes
    )
    assert [r.event.seq for r in got] == _whole(rows, window_rows, window_bytes)


def test_a_row_sent_of_an_earlier_turn_goes_before_the_kept_ones() -> None:
    # turn 1 wrote seq 9 after turn 2 was accepted at seq 5 (its rows kept: 3, 4)
    kept = [_row(1, 1), _row(3, 2), _row(4, 2)]
    got = extended(
        _window(kept, floor=5), [_row(9, 1)], full=False, window_rows=10, window_bytes=1000
    )
    assert [r.event.seq for r in got] == [1, 9, 3, 4]


def test_the_base_is_kept_and_not_counted() -> None:
    kept = [_row(2, -1, size=500), _row(3, 1), _row(4, 1)]
    got = extended(_window(kept, floor=5), [_row(5, 2)], full=False, window_rows=2, window_bytes=20)
    assert [r.event.seq for r in got] == [2, 4, 5]
    # the rows sent fill the window alone: the base stays, no other kept row
    got = extended(_window(kept, floor=5), [_row(5, 2)], full=True, window_rows=2, window_bytes=20)
    assert [r.event.seq for r in got] == [2, 5]
    # a base the kept turn wrote (from the floor on) is sent, and goes first
    kept = [_row(3, 1), _row(4, 1)]
    sent = [_row(6, -1, size=500), _row(5, 2)]
    got = extended(_window(kept, floor=5), sent, full=False, window_rows=2, window_bytes=20)
    assert [r.event.seq for r in got] == [6, 4, 5]


def test_a_window_is_extended_only_when_the_statement_says_it_holds() -> None:
    cache = ContextCache()
    kept = Window(epoch=1, base_seq=None, floor=3, rows=(_row(1, 1),), decoded={1: ()})
    row = {
        "warm": True,
        "window_full": False,
        "context_epoch": 1,
        "base_seq": None,
        "accepted_seq": 5,
    }
    warm = window_of(cache, row, [_row(3, 2)], kept, window_rows=9, window_bytes=999)
    assert [r.event.seq for r in warm.rows] == [1, 3] and warm.floor == 5
    assert warm.decoded[1] == () and warm.decoded[3][0].content == "m3"
    whole = window_of(
        cache, {**row, "warm": False}, [_row(3, 2)], kept, window_rows=9, window_bytes=999
    )
    assert [r.event.seq for r in whole.rows] == [3]
    assert (cache.warm, cache.whole) == (1, 1)


def test_the_cache_keys_by_tenant_and_session_and_forgets_the_least_recent() -> None:
    cache = ContextCache(sessions=2, max_bytes=25)
    w = _window([_row(1, 1)], floor=2)
    cache.put("a", "s", w)
    cache.put("b", "s", w)
    assert cache.get("a", "s") is w and cache.get("c", "s") is None
    cache.put("c", "s", w)  # b was the least recently used
    assert cache.get("b", "s") is None and len(cache) == 2
    cache.put("d", "s", _window([_row(1, 1, size=20)], floor=2))  # over the bytes: a goes
    assert cache.get("a", "s") is None and cache.get("c", "s") is None
    assert cache.get("d", "s") is not None
    cache.put("e", "s", _window([_row(1, 1, size=26)], floor=2))  # larger than them all
    assert cache.get("e", "s") is None
    cache.drop("d", "s")
    assert len(cache) == 0
