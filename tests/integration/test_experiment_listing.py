"""``GET /v1/experiments``'s listing on real Postgres: one statement for a page of
experiments (the store sums each one's cases in SQL, store/sql/experiments.sql
``list_experiments``), and each listed summary the same as the one ``GET
/v1/experiments/{id}`` computes in Python from the experiment's cases
(runtime/evaluation/summary.py ``summarise``).

The experiments' cases are written through the driver's own statements (claim, score,
judge moves) with outcomes of every kind the figures tell apart: passed and failed
assertions, none-of ones, failed turns with and without an error code, cancelled and
refused ones, unknown latencies, recoveries, judges pending, running, done and failed,
cases never claimed. (tests/integration/test_evaluation.py runs experiments end to end
through real workers; this module proves the listing's arithmetic on more outcomes
than a scripted agent gives.)"""

from __future__ import annotations

import random
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from types import SimpleNamespace
from typing import Any, cast

import pytest

from turnkeep.api.auth import Principal
from turnkeep.api.resources import ApiResources
from turnkeep.api.service import experiments
from turnkeep.store.connector import PostgresConnector, Transaction
from turnkeep.store.facade import Store

EXPERIMENTS = 20
CASES = 6
AGENT_HASH = "a" * 64


class Counting(PostgresConnector):
    """The real connector, keeping the name of every statement it runs."""

    def __init__(self, db: Any) -> None:
        super().__init__(db)
        self.names: list[str] = []

    def rows(self, name: str, params: Mapping[str, Any], *, tenant: str) -> list[Any]:
        self.names.append(name)
        return super().rows(name, params, tenant=tenant)

    @contextmanager
    def transaction(self, tenant: str) -> Iterator[Transaction]:
        self.names.append("transaction")
        with super().transaction(tenant) as tx:
            yield tx


def _services(store: Store) -> ApiResources:
    # the listing reads the store alone
    return cast(ApiResources, SimpleNamespace(store=store))


def _assertion(index: int, category: str, passed: bool) -> dict[str, Any]:
    kind = {"none_of": "never_called", "output": "output_contains"}.get(category, "tool_called")
    return {"index": index, "kind": kind, "category": category, "passed": passed, "detail": ""}


def _score(rng: random.Random) -> tuple[bool, dict[str, Any]]:
    """A scored case's (passed, score) of one of the kinds a driver records."""
    kind = rng.choice(["completed", "completed", "failed", "cancelled", "refused"])
    if kind == "refused":  # a quota refused the case's turn: no turn, no figures
        return False, {"turn_state": None, "error_code": "quota_exceeded", "assertions": []}
    assertions = [
        _assertion(0, "trajectory", rng.random() < 0.8),
        _assertion(1, "output", kind == "completed" and rng.random() < 0.7),
    ]
    if rng.random() < 0.5:
        assertions.append(_assertion(2, "none_of", rng.random() < 0.8))
    error = {"completed": None, "cancelled": "cancelled"}.get(
        kind, rng.choice(["model_error", "budget_exceeded", "", None])
    )
    score = {
        "turn_state": kind,
        "error_code": error,
        "assertions": assertions,
        "cost_usd": round(rng.uniform(0, 0.01), 9),
        "tokens": rng.randrange(0, 5000),
        "latency_ms": None if rng.random() < 0.2 else rng.randrange(1, 90_000),
        "steps": rng.randrange(0, 9),
        "model_calls": rng.randrange(0, 4),
        "tool_calls": rng.randrange(0, 4),
        "recovered": int(rng.random() < 0.2),
        "agent_version": "1",
    }
    return all(a["passed"] for a in assertions), score


def _judge(store: Store, tenant: str, eid: str, case_id: str, rng: random.Random) -> None:
    """Move a pending judge on: left pending, running, done with a score, or failed."""
    base = {"session_id": f"j-{case_id}", "turn_id": f"j-{case_id}"}
    to = rng.choice(["pending", "running", "done", "done", "failed"])
    if to == "pending":
        return
    assert store.experiments.judge_moved(tenant, eid, case_id, from_state="pending",
                                         to_state="running", judge=base)  # fmt: skip
    if to == "running":
        return
    judged = {**base, "cost_usd": round(rng.uniform(0, 0.002), 9)}
    if to == "done":
        score = rng.choice([rng.random(), 1.0, 0.0, None])
        judged |= {"verdict": "pass" if (score or 0) >= 0.5 else "fail", "score": score}
    else:
        judged |= {"error": "judge_failed"}
    assert store.experiments.judge_moved(tenant, eid, case_id, from_state="running", to_state=to,
                             judge=judged)  # fmt: skip


@pytest.fixture(scope="module")
def listed(store: Store) -> tuple[str, list[str]]:
    """A tenant with ``EXPERIMENTS`` experiments of ``CASES`` cases each (two agents, a
    judge on every other one), their cases in every state; (the tenant, the ids)."""
    tenant = f"t-{uuid.uuid4().hex[:8]}"
    cases = [
        {"case_id": f"c{i}", "ordinal": i + 1, "input": {"messages": []}, "assertions": [],
         "source": None}
        for i in range(CASES)
    ]  # fmt: skip
    dataset, _ = store.datasets.create_dataset_version(
        tenant, "listing", cases=cases, cases_hash="h" * 64, created_by="test"
    )
    rng = random.Random(20)
    ids = []
    for n in range(EXPERIMENTS):
        eid = f"x{n:02d}-{uuid.uuid4().hex[:6]}"
        judge = {"agent": "judge", "version": "1"} if n % 2 else None
        store.experiments.create_experiment(
            case_prefix=f"eval.{eid}.",
            tenant_id=tenant,
            experiment_id=eid,
            spec_hash=eid,
            created_by="test",
            dataset=dataset.name,
            dataset_version=dataset.version,
            agent_name="evalbot" if n % 3 else "other",
            agent_version="1",
            agent_hash=AGENT_HASH,
            approvals={},
            judge=judge,
            # a window below the cases: some are never claimed (pending)
            concurrency=rng.choice([CASES, CASES, CASES - 2]),
            recovery=False,
        )
        for r in store.experiments.claim_cases(tenant, eid):
            if rng.random() < 0.15:
                continue  # its turn still running
            passed, score = _score(rng)
            pending = None if judge is None else {"session_id": f"j-{r.case_id}",
                                                  "turn_id": f"j-{r.case_id}"}  # fmt: skip
            assert store.experiments.score_case(tenant, eid, r.case_id, passed=passed, score=score,
                                    judge=pending)  # fmt: skip
            if pending is not None:
                _judge(store, tenant, eid, r.case_id, rng)
        ids.append(eid)
    return tenant, ids


def test_a_page_of_experiments_is_one_statement(store: Store, listed: tuple[str, list[str]]):
    tenant, ids = listed
    counting = Counting(store.db)
    page = experiments.listing(
        _services(Store(counting)), Principal(tenant, "carol"), dataset=None, agent=None, limit=50
    )
    assert counting.names == ["list_experiments"]
    # newest first, all of them, with no case results (the listing never carries them)
    assert sorted(e["experiment_id"] for e in page["experiments"]) == sorted(ids)
    assert all(e["results"] == [] for e in page["experiments"])
    # filtered, still one statement
    counting.names.clear()
    mine = experiments.listing(
        _services(Store(counting)), Principal(tenant, "carol"), dataset=None, agent="other",
        limit=50,
    )  # fmt: skip
    assert counting.names == ["list_experiments"]
    assert {e["agent"] for e in mine["experiments"]} == {"other"}
    assert len(mine["experiments"]) == len([n for n in range(EXPERIMENTS) if n % 3 == 0])


def test_each_listed_summary_is_the_one_its_own_read_computes(
    store: Store, listed: tuple[str, list[str]]
):
    tenant, _ = listed
    principal = Principal(tenant, "carol")
    page = experiments.listing(_services(store), principal, dataset=None, agent=None, limit=50)
    assert len(page["experiments"]) == EXPERIMENTS
    for shown in page["experiments"]:
        one = experiments.get(_services(store), principal, shown["experiment_id"])
        expected = one.model_dump(mode="json")
        assert shown["summary"] == expected["summary"], shown["experiment_id"]
        assert shown == {**expected, "results": []}

    # the outcomes were of every kind the figures tell apart, so the equality above
    # held on each branch of the arithmetic, not on zeros
    summaries = [e["summary"] for e in page["experiments"]]
    codes = {code for s in summaries for code in s["failures"]}
    assert {"failed", "cancelled", "model_error", "budget_exceeded"} <= codes, codes
    assert {s["none_of_clean"] for s in summaries} == {True, False}
    assert any(s["scored"] < s["cases"] for s in summaries)
    assert any(s["judge_mean"] is not None for s in summaries)
    assert any(s["judge_cost_usd"] > 0 for s in summaries)
    assert any(s["recovered"] > 0 for s in summaries)
    assert all(s["failed"] == s["scored"] - s["passed"] for s in summaries)


def test_an_experiment_with_no_case_scored_and_another_tenants_listing(
    store: Store, listed: tuple[str, list[str]]
):
    """Sums over nothing: zeros and nulls as summarise gives them; another tenant lists
    none of this one's experiments (row security and the tenant clause)."""
    tenant, _ = listed
    eid = f"empty-{uuid.uuid4().hex[:6]}"
    dataset = store.datasets.get_dataset_version(tenant, "listing")
    store.experiments.create_experiment(
        case_prefix=f"eval.{eid}.", tenant_id=tenant, experiment_id=eid, spec_hash=eid,
        created_by="test", dataset=dataset.name, dataset_version=dataset.version,
        agent_name="lonely", agent_version="1", agent_hash=AGENT_HASH, approvals={},
        judge=None, concurrency=1, recovery=False,
    )  # fmt: skip
    principal = Principal(tenant, "carol")
    [shown] = experiments.listing(
        _services(store), principal, dataset=None, agent="lonely", limit=5
    )["experiments"]
    assert shown["summary"] == {
        "cases": CASES, "scored": 0, "passed": 0, "failed": 0, "pass_rate": None,
        "none_of_clean": None, "cost_usd": 0.0, "tokens": 0, "steps": 0,
        "latency_ms_mean": None, "latency_ms_max": None, "recovered": 0, "failures": {},
        "judge_cost_usd": 0.0, "judge_mean": None, "judged": 0,
    }  # fmt: skip
    assert shown == {**experiments.get(_services(store), principal, eid).model_dump(mode="json"),
                     "results": []}  # fmt: skip
    other = Principal(f"t-{uuid.uuid4().hex[:8]}", "bob")
    assert experiments.listing(_services(store), other, dataset=None, agent=None, limit=50) == {
        "experiments": []
    }
