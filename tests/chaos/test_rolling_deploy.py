"""A rolling deploy with real workers (docs/deploy.md): build A's workers run, build
B's start beside them, build A's get SIGTERM and finish what they hold. Across it a
turn waiting for approval, a pinned one waiting too, a parked reconciliation and a
lane of queued turns (with a turn admitted under build B behind them while an old
worker drains the lane) all end ``completed``: none ``agent_changed``. A ``pinned``
turn finishes on the definition it was admitted with; every other turn that ran
under build B moved exactly once, right before a model call."""

from __future__ import annotations

import signal
from typing import Any

import httpx
import pytest

from tests.chaos.conftest import Chaos, signalled
from tests.chaos.deploys import (
    BUILD_A,
    BUILD_B,
    BUILD_C,
    admit,
    answer,
    definition,
    moves,
)
from tests.procs import wait_for
from turnkeep.runtime.states import TurnState
from turnkeep.store.fleet import definition_queue


def _state(chaos: Chaos, sid: str, tid: str) -> TurnState:
    return chaos.store.reads.get_turn(chaos.tenant, sid, tid).state


@pytest.mark.chaos
def test_a_rolling_deploy_loses_no_turn(chaos: Chaos, sid: str) -> None:
    chaos.procs.beat()
    # a parked reconciliation from before the deploy: a build A worker dies inside the
    # ledger's effectful call, the next one parks the turn to be told what happened
    rec = f"{sid}-rec"
    victim = chaos.procs.worker(
        {
            **BUILD_A,
            "TURNKEEP_FAULTS": "after_tool_effect=kill-once",
            "TURNKEEP_FAULTS_SESSIONS": rec,
        }
    )
    r = admit(chaos, "build_a", rec, "ledger", "tool=charge")
    wait_for(signalled(victim, signal.SIGKILL), 30, what="the ledger's worker killed")
    old = chaos.procs.worker({**BUILD_A, "TURNKEEP_TEST_TOOL_SLEEP": "0.7"})
    wait_for(
        lambda: _state(chaos, rec, r) is TurnState.NEEDS_RECONCILIATION,
        30,
        what="the ledger's turn parked for reconciliation",
    )

    # two approvals asked under build A, one of an upgrade agent, one of a pinned one
    ask, keep = f"{sid}-ask", f"{sid}-keep"
    t1 = admit(chaos, "build_a", ask, "support", "tool=stamp")
    t2 = admit(chaos, "build_a", keep, "keeper", "tool=stamp")
    for s, t in ((ask, t1), (keep, t2)):
        wait_for(
            lambda s=s, t=t: _state(chaos, s, t) is TurnState.WAITING, 30, what="an approval asked"
        )

    # a lane of five queued turns the old worker is draining (0.7 s a tool call)
    lane = f"{sid}-lane"
    queued = [admit(chaos, "build_a", lane, "support", "tool=count") for _ in range(5)]
    wait_for(
        lambda: _state(chaos, lane, queued[0]) is not TurnState.QUEUED, 30, what="the lane started"
    )

    # build B starts beside build A; a turn admitted under it joins the lane
    new = chaos.procs.worker(BUILD_B)
    newer = admit(chaos, "build_b", lane, "support", "tool=count")
    queued.append(newer)
    old.signal(signal.SIGTERM)  # a warm shutdown: it finishes the turn it runs
    wait_for(lambda: not old.alive(), 60, what="the old worker's warm shutdown")

    # the deploy is over: the waits are answered now, on build B
    answer(chaos, ask, t1, {"approved": True})
    answer(chaos, keep, t2, {"approved": True})
    answer(chaos, rec, r, {"outcome": "succeeded", "result": {"charged": 5}})
    chaos.wait_all_terminal(timeout=120)

    support2 = definition("build_b", "support")
    keeper1 = definition("build_a", "keeper")
    for tenant, s, t in chaos.accepted:
        turn = chaos.store.reads.get_turn(tenant, s, t)
        assert turn.state is TurnState.COMPLETED, (s, turn.error)
        moved = moves(chaos, s, t)
        if t == t2:  # pinned: every step on its own definition
            assert moved == [] and turn.agent_hash == keeper1.definition_hash
            assert turn.result is not None and turn.result["text"] == "answered by keeper v1"
            continue
        version = turn.agent_version
        assert turn.result is not None
        assert turn.result["text"].endswith(f" v{version}"), (turn.result, version)
        if version == "1":  # finished on build A, before the deploy
            assert moved == []
            continue
        if t == newer:  # admitted under build B: nothing to move
            assert moved == [] and turn.agent_hash == support2.definition_hash
            continue
        assert len(moved) == 1, (s, moved)
        change, after = moved[0]
        assert after == "model.completed", (s, after)
        assert change.to_version == "2" and change.from_version == "1"
        assert change.reason == "not_served"
    # the approval and the reconciliation were applied, not asked again
    for s, t in ((ask, t1), (keep, t2), (rec, r)):
        events = chaos.store.reads.turn_events(chaos.tenant, s, t)
        assert sum(e.type == "input.requested" for e in events) == 1, s
    # something ran on build B after the move: the lane's tail, the answered turns
    assert any(
        chaos.store.reads.get_turn(chaos.tenant, lane, t).agent_version == "2" for t in queued
    )
    # the turn behind the old worker's lane was handed to build B's queue for it, which
    # build B consumed once something waited there
    v2_queue = definition_queue(chaos.queue, support2.definition_hash)
    assert f"consuming definition queue {v2_queue}" in new.text()
    assert not chaos.check()


@pytest.mark.chaos
def test_a_pinned_turn_nobody_serves_is_held_visibly_cancellable_and_runs_when_served(
    chaos: Chaos, sid: str
) -> None:
    # beat's recovery scan hands the held session out again every scan: the delivery
    # that reaches a worker serving the definition (or one that hands it on) runs it
    chaos.procs.beat()
    chaos.procs.worker(BUILD_C)
    api = chaos.api(BUILD_C)
    held, dropped = f"{sid}-held", f"{sid}-drop"
    t = admit(chaos, "build_a", held, "keeper", "tool=count")
    u = admit(chaos, "build_a", dropped, "keeper", "tool=count")
    keeper1 = definition("build_a", "keeper")
    with httpx.Client(base_url=api.url, headers=api.headers, timeout=10) as http:

        def shown() -> dict[str, Any] | None:
            body = http.get(f"/v1/sessions/{held}/turns/{t}").json()
            return body if body.get("held") else None

        body = wait_for(shown, 30, what="the turn shown held")
        assert body["state"] == "queued" and body["agent_version"] == "1"
        assert body["held"] == {
            "reason": "definition_unavailable",
            "definition_hash": keeper1.definition_hash,
        }
        versions = http.get("/v1/agents/keeper/versions").json()["versions"]
        by_hash = {v["definition_hash"]: v for v in versions}
        old = by_hash[keeper1.definition_hash]
        assert (old["declared"], old["version"], old["workers"]) == (False, None, [])
        assert old["turns"] == {"queued": 2}
        latest = [v for v in versions if v["latest"]]
        assert len(latest) == 1 and latest[0]["version"] == "2" and latest[0]["workers"]
        # held, not stuck: a cancellation settles it at once
        r = http.post(f"/v1/sessions/{dropped}/turns/{u}/cancel")
        assert r.status_code == 202 and r.json()["state"] == "cancelled", r.text
    chaos.accepted.remove((chaos.tenant, dropped, u))
    assert chaos.store.reads.get_turn(chaos.tenant, held, t).attempt == 0
    # a worker that serves the definition comes back: the held turn runs on it
    chaos.procs.worker(BUILD_A)
    turn = chaos.wait_terminal(held, t, timeout=60)
    assert turn.state is TurnState.COMPLETED, turn.error
    assert turn.agent_hash == keeper1.definition_hash
    assert turn.result is not None and turn.result["text"] == "answered by keeper v1"
    assert moves(chaos, held, t) == []
    assert not chaos.check()
