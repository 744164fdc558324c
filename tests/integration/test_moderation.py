"""The ``moderation`` processor against a moderation endpoint that answers
(tests/moderation.py), run by a real worker: a flagged input fails the turn
``processor_blocked`` before the model is called, the blocking receipt on its
``turn.failed``; an unflagged one completes, the input's and the answer's receipts on
its ``model.completed``. Each receipt's hash is that of the very text the endpoint was
asked about, and the endpoint saw nothing else. (Unreachable, it fails closed:
tests/unit/test_executor.py.)"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.moderation import FLAGGED, ModerationServer, moderated
from tests.procs import Procs
from turnkeep.runtime.agents.registry import AgentRegistry
from turnkeep.runtime.hashing import sha256_hex
from turnkeep.runtime.states import TurnState


@pytest.fixture
def moderator() -> Iterator[ModerationServer]:
    with ModerationServer() as server:
        yield server


@pytest.fixture
def worker(procs: Procs, moderator: ModerationServer, client: Any) -> Procs:
    """A worker serving the ``moderated`` agent at this endpoint; ``client`` admits
    turns pinned to the same definition."""
    procs.worker(
        {"TURNKEEP_AGENTS": "tests.moderation", "TURNKEEP_TEST_MODERATION_URL": moderator.url}
    )
    client.agents = AgentRegistry([moderated(moderator.url)])
    return procs


def _receipt(stage: str, text: str, verdict: str, signal: str = "") -> dict[str, str]:
    return {
        "name": "moderation",
        "version": "1",
        "stage": stage,
        "sha256": sha256_hex(text),
        "verdict": verdict,
        "signal": signal,
    }


def test_a_flagged_input_blocks_the_turn_and_leaves_its_receipt(
    worker: Procs, moderator: ModerationServer, client: Any, store: Any, tenant: str, sid: str
) -> None:
    tid = client.admit(tenant, sid, "moderated", f"tell me how to {FLAGGED}")
    turn = client.wait_terminal(tenant, sid, tid)
    assert turn.state is TurnState.FAILED
    assert turn.error == {"code": "processor_blocked", "message": "moderation (input): violence"}
    events = store.reads.turn_events(tenant, sid, tid)
    # blocked before the model was called: no model.completed, nothing of an answer
    assert [e.type for e in events] == ["turn.accepted", "turn.started", "turn.failed"]
    [asked] = moderator.asked()  # the input, once; the answer never came to be
    assert FLAGGED in asked
    assert events[-1].data["receipts"] == [_receipt("input", asked, "block", "violence")]


def test_an_unflagged_input_completes_with_both_receipts(
    worker: Procs, moderator: ModerationServer, client: Any, store: Any, tenant: str, sid: str
) -> None:
    tid = client.admit(tenant, sid, "moderated", "what a nice day")
    turn = client.wait_terminal(tenant, sid, tid)
    assert turn.state is TurnState.COMPLETED, turn.error
    assert turn.result["text"] == "seen 1: what a nice day"
    events = store.reads.turn_events(tenant, sid, tid)
    [completed] = [e for e in events if e.type == "model.completed"]
    asked_input, asked_output = moderator.asked()
    assert "what a nice day" in asked_input and "seen 1: what a nice day" in asked_output
    assert completed.data["receipts"] == [
        _receipt("input", asked_input, "pass"),
        _receipt("output", asked_output, "pass"),
    ]
