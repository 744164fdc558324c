"""Approvals asked together (runtime/input_groups.py): the group a turn waits on, its
top level (what start_turn and the scans read), read as the turn's typed wait
(runtime/pending.py), and answers recorded on it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from turnkeep.runtime import input_groups as groups
from turnkeep.runtime.input_groups import GroupAnswer, GroupRefused
from turnkeep.runtime.pending import TurnWait

LATER = (datetime.now(UTC) + timedelta(hours=1)).isoformat()
EARLIER = (datetime.now(UTC) - timedelta(seconds=1)).isoformat()


def _req(step: int, expires_at: str = LATER) -> dict[str, object]:
    return {"request_id": f"approval-{step}-1", "kind": "approval", "step": step,
            "expires_at": expires_at}  # fmt: skip


def _wait(pending: dict[str, object]) -> TurnWait:
    return TurnWait.from_json(pending)


def _open(pending: dict[str, object]) -> list[dict[str, object]]:
    return [r.to_json() for r in _wait(pending).open_requests()]


def test_a_group_is_kept_as_its_first_open_request_plus_every_request():
    reqs = [_req(2), _req(3)]
    pending = groups.pending(reqs)
    assert pending["request_id"] == "approval-2-1" and pending["group"] == reqs
    assert _wait(pending).is_group and not _wait(reqs[0]).is_group
    assert _wait(pending).to_json() == pending
    assert _open(pending) == reqs
    assert _open(reqs[0]) == [reqs[0]]
    assert _open({**reqs[0], "resolved": True}) == []
    member = _wait(pending).member("approval-3-1")
    assert member is not None and member.to_json() == reqs[1]
    assert _wait(pending).member("approval-9-1") is None
    alone = _wait(reqs[0]).member("approval-2-1")
    assert alone is not None and alone.to_json() == reqs[0]


def test_answers_move_the_top_level_on_and_resolve_it_after_the_last():
    pending = groups.pending([_req(2), _req(3), _req(4)])
    first = groups.answer(
        _wait(pending), [GroupAnswer("approval-3-1", {"approved": True}, "h")], by="ann"
    )
    top = first.pending_input
    assert top["request_id"] == "approval-2-1" and "resolved" not in top
    assert [r.step for r in _wait(top).open_requests()] == [2, 4]
    assert first.resolved == [
        {
            "request_id": "approval-3-1",
            "kind": "approval",
            "step": 3,
            "response": {"approved": True},
            "response_hash": "h",
            "by": "ann",
        }
    ]
    rest = [
        GroupAnswer("approval-2-1", {"approved": False}, "h2"),
        GroupAnswer("approval-4-1", {}, "h4"),
    ]
    done = groups.answer(_wait(top), rest, by="bo").pending_input
    assert done["resolved"] is True and done["request_id"] == "approval-4-1"
    assert _open(done) == []
    assert _wait(done).member("approval-2-1").response == {"approved": False}  # type: ignore[union-attr]
    # the input is never changed in place
    assert _open(pending) == pending["group"]


@pytest.mark.parametrize(
    ("answers", "reason"),
    [
        ([GroupAnswer("approval-9-1", {}, "h")], "missing"),
        ([GroupAnswer("approval-2-1", {}, "h"), GroupAnswer("approval-2-1", {}, "h")], "answered"),
        ([GroupAnswer("approval-3-1", {}, "h")], "expired"),
    ],
)
def test_an_answer_the_group_cannot_take_is_refused(answers, reason):
    pending = groups.pending([_req(2), _req(3, EARLIER)])
    with pytest.raises(GroupRefused) as refused:
        groups.answer(_wait(pending), answers, by="x")
    assert refused.value.reason == reason


def test_the_scan_settles_the_expired_ones_and_only_those():
    pending = groups.pending([_req(2, EARLIER), _req(3), _req(4, EARLIER)])
    assert _wait(pending).due() == ["approval-2-1", "approval-4-1"]
    due = [GroupAnswer(r, {"expired": True}, "h") for r in _wait(pending).due()]
    left = groups.answer(_wait(pending), due, by="scan", expired=True).pending_input
    assert left["request_id"] == "approval-3-1"
    assert [r.step for r in _wait(left).open_requests()] == [3]
    settled = _wait(left).member("approval-2-1")
    assert settled is not None and settled.expired_unanswered


def test_only_the_last_request_of_a_group_parks_the_turn():
    assert groups.parks(_req(2))  # asked alone
    first = {**_req(2), "detail": {groups.TOGETHER: {"nth": 1, "of": 3}}}
    last = {**_req(4), "detail": {groups.TOGETHER: {"nth": 3, "of": 3}}}
    assert not groups.parks(first) and groups.parks(last)
