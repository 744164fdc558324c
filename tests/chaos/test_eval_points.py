"""Experiments under faults (issue 28, recovery/experiments.py): a worker SIGKILLed in
the middle of a case's turn, and the driver SIGKILLed around each of its statements
(claim, score). Each time the experiment completes with every case scored once, each
case's turn admitted once, the same results as a run nobody killed, and the journal's
invariants holding. The drill also feeds the promotion gate's recovery check
(runtime/evaluation/gate.py): refused before the drill, accepted after it."""

from __future__ import annotations

import json
import signal
import uuid
from typing import Any

import httpx
import psycopg
import pytest

from tests.chaos.conftest import Chaos, signalled
from tests.procs import Proc, wait_for
from turnkeep.api.auth import token_digest
from turnkeep.runtime.evaluation import case_ids
from turnkeep.runtime.obs.faults import EXPERIMENT_POINTS, FaultPoint

EVAL = {"TURNKEEP_AGENTS": "tests.eval_agents", "TURNKEEP_EVAL_INTERVAL": "0.5"}


def _case(case_id: str, text: str, *assertions: dict[str, Any]) -> dict[str, Any]:
    return {
        "case_id": case_id,
        "input": {"messages": [{"role": "user", "content": text}]},
        "assertions": list(assertions),
    }


#: drillbot v2 passes every one (tests/eval_agents.py); book-* book once per turn
CASES = [
    _case("book-rome", "task=book city=Rome", {"kind": "tool_order", "tools": ["lookup", "book"]}),
    _case("weather", "task=weather city=Paris", {"kind": "output_contains", "text": "Paris"}),
    _case("book-oslo", "task=book city=Oslo", {"kind": "tool_called", "tool": "book"}),
    _case("ping", "task=ping", {"kind": "output_equals", "value": "pong"}),
]


class Api:
    """An API process of the scenario serving tests.eval_agents, a member's and an
    admin's token for its tenant."""

    def __init__(self, chaos: Chaos) -> None:
        member, admin = f"m-{uuid.uuid4().hex}", f"a-{uuid.uuid4().hex}"
        tokens = [
            {"sha256": token_digest(member), "tenant": chaos.tenant, "subject": "chaos"},
            {"sha256": token_digest(admin), "tenant": chaos.tenant, "subject": "boss",
             "role": "admin"},
        ]  # fmt: skip
        proc = chaos.procs.api({**EVAL, "TURNKEEP_TOKENS": json.dumps(tokens)})
        self.member = httpx.Client(
            base_url=proc.url, headers={"Authorization": f"Bearer {member}"}, timeout=30
        )
        self.admin = httpx.Client(
            base_url=proc.url, headers={"Authorization": f"Bearer {admin}"}, timeout=30
        )

    def start(self, eid: str, **body: Any) -> None:
        r = self.member.post("/v1/experiments", json=body, headers={"Idempotency-Key": eid})
        assert r.status_code == 201, r.text

    def completed(self, eid: str, timeout: float = 120) -> dict[str, Any]:
        def done() -> dict[str, Any] | None:
            got = self.member.get(f"/v1/experiments/{eid}").json()
            return got if got["state"] == "completed" else None

        return dict(wait_for(done, timeout, interval=0.2, what=f"experiment {eid}"))  # type: ignore[arg-type]


def _outcomes(exp: dict[str, Any]) -> dict[str, list[bool]]:
    return {r["case_id"]: [a["passed"] for a in r["assertions"]] for r in exp["results"]}


def _counted_once(chaos: Chaos, api: Api, exp: dict[str, Any]) -> None:
    """Every case scored once, by one turn in its own session, admitted once; the book
    tool's effect once per case; the invariants hold over every case's session."""
    eid = exp["experiment_id"]
    assert [r["state"] for r in exp["results"]] == ["scored"] * len(CASES)
    for r in exp["results"]:
        turns = chaos.store.reads.list_turns(chaos.tenant, r["session_id"])
        assert (
            [t.turn_id for t in turns]
            == [r["turn_id"]]
            == [case_ids.case_session(eid, r["case_id"])]
        )
        chaos.accepted.append((chaos.tenant, r["session_id"], r["turn_id"]))
    with psycopg.connect(chaos.database_url.replace("+psycopg", "")) as conn:
        effects = conn.execute(
            "SELECT key, applied FROM test_tool_effects WHERE key LIKE %s",
            (f"{chaos.tenant}/{case_ids.prefix(eid)}%",),
        ).fetchall()
        rows = conn.execute(
            "SELECT count(*) FROM eval_results WHERE tenant_id = %s AND experiment_id = %s",
            (chaos.tenant, eid),
        ).fetchone()
    assert sorted(k.split("/")[1] for k, _ in effects) == [
        case_ids.case_session(eid, c) for c in ("book-oslo", "book-rome")
    ]
    assert all(applied == 1 for _, applied in effects) and rows == (len(CASES),)
    assert chaos.check() == []


def _killed(proc: Proc, point: str) -> None:
    wait_for(signalled(proc, signal.SIGKILL), 90, what=f"worker SIGKILLed at {point}")


@pytest.mark.chaos
def test_a_worker_killed_mid_turn_loses_no_case_and_the_drill_feeds_the_gate(
    chaos: Chaos,
) -> None:
    chaos.procs.beat(EVAL)
    calm = chaos.procs.worker(EVAL)
    api = Api(chaos)
    r = api.member.post("/v1/datasets/drill-core/versions", json={"cases": CASES})
    assert r.status_code == 201, r.text
    for version in ("1", "2"):
        api.start(f"base-{version}", dataset="drill-core", agent="drillbot", agent_version=version)
    base = {v: api.completed(f"base-{v}") for v in ("1", "2")}
    assert base["2"]["summary"]["pass_rate"] == 1.0 and base["1"]["summary"]["pass_rate"] == 0.75

    refused = api.admin.post("/v1/agents/drillbot/versions/2/promote")
    assert refused.status_code == 409, refused.text
    assert [c["check"] for c in refused.json()["failed"]] == ["recovery"]

    # the drill: the only worker dies right after a commit of a case's turn, mid-turn
    calm.stop()
    victim = chaos.procs.worker(
        {
            **EVAL,
            "TURNKEEP_FAULTS": f"{FaultPoint.AFTER_COMMIT.value}=kill-once",
            "TURNKEEP_FAULTS_SESSIONS": case_ids.prefix("drill"),
        }
    )
    api.start("drill", dataset="drill-core", agent="drillbot", agent_version="2", recovery=True)
    _killed(victim, FaultPoint.AFTER_COMMIT.value)
    chaos.procs.worker(EVAL)
    drill = api.completed("drill")
    assert drill["summary"]["recovered"] >= 1
    assert _outcomes(drill) == _outcomes(base["2"])
    _counted_once(chaos, api, drill)

    accepted = api.admin.post("/v1/agents/drillbot/versions/2/promote")
    assert accepted.status_code == 200, accepted.text
    recovery = [c for c in accepted.json()["checks"] if c["check"] == "recovery"]
    assert recovery[0]["passed"] and "drill" in recovery[0]["experiments"]


@pytest.mark.chaos
@pytest.mark.parametrize("point", sorted(EXPERIMENT_POINTS))
def test_the_driver_killed_around_each_statement(chaos: Chaos, point: FaultPoint) -> None:
    chaos.procs.beat(EVAL)
    eid = f"x-{point.value.replace('_', '-')}"
    victim = chaos.procs.worker(
        {
            **EVAL,
            "TURNKEEP_FAULTS": f"{point.value}=kill-once",
            "TURNKEEP_FAULTS_SESSIONS": case_ids.prefix(eid),
        }
    )
    api = Api(chaos)
    r = api.member.post("/v1/datasets/core/versions", json={"cases": CASES})
    assert r.status_code == 201, r.text
    api.start(eid, dataset="core", agent="drillbot", agent_version="2", concurrency=4)
    _killed(victim, point.value)
    chaos.procs.worker(EVAL)
    exp = api.completed(eid)
    assert all(r["passed"] for r in exp["results"]), exp["results"]
    _counted_once(chaos, api, exp)
