"""A connection dropped during COMMIT, for real: a wire-protocol proxy between the
process and Postgres cuts every side of the connection right after the client
sent COMMIT, either once the server answered (the commit landed, the reply is
lost) or before the server got it (nothing landed).

The worker's checkpoint retry must recognise its own committed row (and not take
it for a lost lease), or write the step again when it did not land: one outcome
per step either way. The API's admission retried with the same Idempotency-Key
answers with the same turn.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import httpx
import pytest

from tests.chaos.conftest import Chaos, turn_body
from tests.chaos.pgproxy import PgProxy, Statement, Trigger
from tests.procs import Proc, wait_for
from turnkeep.runtime.states import TurnState

TASK_RAN = re.compile(r"turnkeep\.run_session\[[^\]]+\] succeeded in [0-9.e-]+s: 'ran'")
#: the session task's end (a worker also runs a webhook delivery pass at start-up)
TASK_ENDED = re.compile(r"turnkeep\.run_session\[[^\]]+\] succeeded in")

NORMAL = [
    "turn.accepted",
    "turn.started",
    "model.completed",
    "tool.completed",
    "model.completed",
    "tool.completed",
    "model.completed",
    "turn.completed",
]


@pytest.fixture
def proxy(database_url: str) -> Iterator[PgProxy]:
    port = int(database_url.rsplit(":", 1)[1].split("/", 1)[0])
    p = PgProxy(port).start()
    yield p
    p.close()


def via(proxy: PgProxy, database_url: str) -> str:
    """The test database's URL through the proxy."""
    prefix, rest = database_url.split("@", 1)
    return f"{prefix}@127.0.0.1:{proxy.port}/{rest.split('/', 1)[1]}"


def fenced_append(event_type: str) -> Trigger:
    """A transaction that ran the fenced_append statement for an ``event_type`` event."""

    def match(txn: list[Statement]) -> bool:
        return any("WITH s AS" in q and event_type.encode() in b for q, b in txn)

    return match


def task_ended(worker: Proc) -> str:
    wait_for(lambda: TASK_ENDED.search(worker.text()), 30, what="the task ends")
    return worker.text()


def admission(txn: list[Statement]) -> bool:
    return any("INSERT INTO turns" in q for q, _ in txn)


@pytest.mark.chaos
@pytest.mark.parametrize("mode", ["after_reply", "before_server"])
def test_checkpoint_commit_cut_retry_keeps_one_outcome_per_step(
    chaos: Chaos, proxy: PgProxy, database_url: str, sid: str, mode: str
) -> None:
    # no beat: a worker that gave up on the cut would leave the turn stuck, not
    # quietly recovered by another attempt
    proxy.arm(fenced_append("tool.completed"), mode=mode)
    proxy.arm(fenced_append("turn.completed"), mode=mode)
    w = chaos.procs.worker({"TURNKEEP_DATABASE_URL": via(proxy, database_url)})
    tid = chaos.admit(sid, "steps=2")
    turn = chaos.wait_terminal(sid, tid, timeout=60)

    assert [c.mode for c in proxy.cuts] == [mode, mode] and proxy.armed() == 0
    assert turn.state is TurnState.COMPLETED, turn.error
    assert turn.attempt == 1  # the same run went on: no takeover, no rerun
    events = chaos.store.reads.turn_events(chaos.tenant, sid, tid)
    assert [e.type for e in events] == NORMAL
    assert len({e.fence for e in events if e.fence}) == 1
    # the last cut lands the terminal commit before the worker hears of it
    log = task_ended(w)
    assert TASK_RAN.search(log), log[-800:]
    assert "lease lost" not in log.lower()
    assert log.count("checkpoint commit failed: postgres unavailable") >= 2
    landed = log.count("a checkpoint whose commit reply was lost had landed")
    assert landed == (2 if mode == "after_reply" else 0), landed
    assert chaos.check() == []


@pytest.mark.chaos
def test_commit_cut_while_a_cancel_lands_is_recognised_not_lease_lost(
    chaos: Chaos, proxy: PgProxy, database_url: str, sid: str
) -> None:
    """Regression: the retry looked only at the turn's newest event, so a cancel
    request committed between the lost reply and the retry (its event is the turn's
    newest) made the worker take its own landed commit for a lost lease."""
    box: dict[str, str] = {}

    def cancel_meanwhile() -> None:
        chaos.store.turns.request_cancel(chaos.tenant, sid, box["tid"], subject="chaos")

    proxy.arm(fenced_append("tool.completed"), mode="after_reply", on_cut=cancel_meanwhile)
    w = chaos.procs.worker(
        {"TURNKEEP_DATABASE_URL": via(proxy, database_url), "TURNKEEP_TEST_TOOL_SLEEP": "0.5"}
    )
    box["tid"] = tid = chaos.admit(sid, "steps=3")
    log = task_ended(w)
    assert "lease lost" not in log.lower()
    assert TASK_RAN.search(log), log[-800:]
    assert "had landed" in log
    turn = chaos.wait_terminal(sid, tid, timeout=60)
    # the worker went on from its landed step, saw the request and stopped there
    assert turn.state is TurnState.CANCELLED and turn.attempt == 1
    types = [e.type for e in chaos.store.reads.turn_events(chaos.tenant, sid, tid)]
    assert types == [
        "turn.accepted",
        "turn.started",
        "model.completed",
        "tool.completed",
        "turn.cancel_requested",
        "turn.cancelled",
    ]
    assert chaos.check() == []


def get_turn(txn: list[Statement]) -> bool:
    return any(q.startswith("SELECT * FROM turns") and "turn_id =" in q for q, _ in txn)


@pytest.mark.chaos
def test_commit_cut_then_the_landed_check_cut_too_is_not_lease_lost(
    chaos: Chaos, proxy: PgProxy, database_url: str, sid: str
) -> None:
    """Regression: when the read that asks "did my commit land?" failed as well, the
    retry took "cannot tell" for "did not land" and wrote the step again under the
    old revision: zero rows, so the worker took its own landed commit for a lost
    lease. The connection flapped twice, which is what a flapping network does."""

    def cut_the_check_too() -> None:
        proxy.arm(get_turn, mode="before_server")

    proxy.arm(fenced_append("tool.completed"), mode="after_reply", on_cut=cut_the_check_too)
    w = chaos.procs.worker({"TURNKEEP_DATABASE_URL": via(proxy, database_url)})
    tid = chaos.admit(sid, "steps=2")
    log = task_ended(w)
    assert len(proxy.cuts) == 2 and proxy.armed() == 0
    assert "lease lost" not in log.lower()
    assert TASK_RAN.search(log), log[-800:]
    assert log.count("had landed") == 1
    turn = chaos.wait_terminal(sid, tid, timeout=60)
    assert turn.state is TurnState.COMPLETED and turn.attempt == 1, turn
    assert [e.type for e in chaos.store.reads.turn_events(chaos.tenant, sid, tid)] == NORMAL
    assert chaos.check() == []


@pytest.mark.chaos
@pytest.mark.parametrize("mode", ["after_reply", "before_server"])
def test_admission_commit_cut_then_same_key_answers_the_same_turn(
    chaos: Chaos, proxy: PgProxy, database_url: str, sid: str, mode: str
) -> None:
    chaos.procs.worker()
    api = chaos.api({"TURNKEEP_DATABASE_URL": via(proxy, database_url)})
    proxy.arm(admission, mode=mode)
    key = f"cut-{mode}"
    with httpx.Client(base_url=api.url, headers=api.headers, timeout=30) as c:

        def post() -> httpx.Response:
            return c.post(
                f"/v1/sessions/{sid}/turns",
                json=turn_body("steps=1"),
                headers={"Idempotency-Key": key},
            )

        first = post()
        assert first.status_code == 503 and first.json()["code"] == "unavailable", first.text
        assert len(proxy.cuts) == 1
        again = post()
        # landed: the stored turn (200); not landed: admitted now (202). Same turn.
        assert again.status_code == (200 if mode == "after_reply" else 202), again.text
        body = again.json()
        assert body["turn_id"] == key and body["accepted_seq"] == 1
        third = post()
        assert third.status_code == 200 and third.json()["turn_id"] == key
    chaos.accepted.append((chaos.tenant, sid, key))
    turns = chaos.store.reads.list_turns(chaos.tenant, sid)
    assert [t.turn_id for t in turns] == [key]
    turn = chaos.wait_terminal(sid, key)
    assert turn.state is TurnState.COMPLETED, turn.error
    accepted = [
        e
        for e in chaos.store.reads.turn_events(chaos.tenant, sid, key)
        if e.type == "turn.accepted"
    ]
    assert len(accepted) == 1 and accepted[0].seq == 1
    wait_for(lambda: chaos.store.reads.get_session(chaos.tenant, sid).head_seq > 1, 60, what="head")
    assert chaos.check() == []
