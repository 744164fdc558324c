"""Approvals asked together (runtime/input_groups.py): the group a turn waits on, its
top level (what start_turn and the scans read), and answers recorded on it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from turnkeep.runtime import input_groups as groups
from turnkeep.runtime.input_groups import GroupAnswer, GroupRefused

LATER = (datetime.now(UTC) + timedelta(hours=1)).isoformat()
EARLIER = (datetime.now(UTC) - timedelta(seconds=1)).isoformat()


def _req(step: int, expires_at: str = LATER) -> dict[str, object]:
    return {"request_id": f"approval-{step}-1", "kind": "approval", "step": step,
            "expires_at": expires_at}  # fmt: skip


def test_a_group_is_kept_as_its_first_open_request_plus_every_request():
    reqs = [_req(2), _req(3)]
    pending = groups.pending(reqs)
    assert pending["request_id"] == "approval-2-1" and pending["group"] == reqs
    assert groups.is_group(pending) and not groups.is_group(reqs[0])
    assert groups.open_requests(pending) == reqs
    assert groups.open_requests(reqs[0]) == [reqs[0]]
    assert groups.open_requests({**reqs[0], "resolved": True}) == []
    assert groups.open_requests(None) == []
    assert groups.member(pending, "approval-3-1") == reqs[1]
    assert groups.member(pending, "approval-9-1") is None
    assert groups.member(reqs[0], "approval-2-1") == reqs[0]


def test_answers_move_the_top_level_on_and_resolve_it_after_the_last():
    pending = groups.pending([_req(2), _req(3), _req(4)])
    first = groups.answer(pending, [GroupAnswer("approval-3-1", {"approved": True}, "h")], by="ann")
    top = first.pending_input
    assert top["request_id"] == "approval-2-1" and "resolved" not in top
    assert [r["step"] for r in groups.open_requests(top)] == [2, 4]
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
    done = groups.answer(top, rest, by="bo").pending_input
    assert done["resolved"] is True and done["request_id"] == "approval-4-1"
    assert groups.open_requests(done) == []
    # the input is never changed in place
    assert groups.open_requests(pending) == pending["group"]


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
        groups.answer(pending, answers, by="x")
    assert refused.value.reason == reason


def test_the_scan_settles_the_expired_ones_and_only_those():
    pending = groups.pending([_req(2, EARLIER), _req(3), _req(4, EARLIER)])
    assert groups.due(pending) == ["approval-2-1", "approval-4-1"]
    due = [GroupAnswer(r, {"expired": True}, "h") for r in groups.due(pending)]
    left = groups.answer(pending, due, by="scan", expired=True).pending_input
    assert left["request_id"] == "approval-3-1"
    assert [r["step"] for r in groups.open_requests(left)] == [3]


def test_only_the_last_request_of_a_group_parks_the_turn():
    assert groups.parks(_req(2))  # asked alone
    first = {**_req(2), "detail": {groups.TOGETHER: {"nth": 1, "of": 3}}}
    last = {**_req(4), "detail": {groups.TOGETHER: {"nth": 3, "of": 3}}}
    assert not groups.parks(first) and groups.parks(last)
