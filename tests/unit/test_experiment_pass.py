"""The experiments' driver (recovery/experiments.py) against a scripted store: a pass
that stops at a case still sends its experiment to the back of beat's scan, so cases
that fail every pass never crowd the other experiments out of the scan's page
(issue 37)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from turnkeep.recovery import experiments
from turnkeep.runtime.agents.registry import AgentRegistry
from turnkeep.store.errors import Unavailable
from turnkeep.store.experiments import ExperimentRecord, ResultRecord

T0 = datetime(2026, 1, 1, tzinfo=UTC)


class Scripted:
    """The statements one pass makes, each case's turn read failing."""

    def __init__(self) -> None:
        self.advanced: list[tuple[str, str]] = []
        # the store's parts a pass reads and writes, all this script
        self.experiments = self.datasets = self.reads = self

    def get_experiment(self, tenant_id: str, experiment_id: str) -> ExperimentRecord:
        return ExperimentRecord(
            tenant_id=tenant_id,
            experiment_id=experiment_id,
            dataset="d",
            dataset_version=1,
            agent_name="a",
            agent_version="1",
            agent_hash="h",
            spec_hash="s",
            approvals={},
            judge=None,
            concurrency=1,
            recovery=False,
            state="running",
            created_by="alice",
            created_at=T0,
            updated_at=T0,
            completed_at=None,
        )

    def dataset_cases(self, *args: Any) -> list[Any]:
        return []

    def running_cases(self, tenant_id: str, experiment_id: str) -> list[ResultRecord]:
        sid = f"eval.{experiment_id}.c1"
        return [ResultRecord("c1", 1, "running", sid, sid, None, None, None, None)]

    def get_turn(self, *args: Any) -> Any:
        raise Unavailable("the database went away")

    def experiment_advanced(self, tenant_id: str, experiment_id: str) -> bool:
        self.advanced.append((tenant_id, experiment_id))
        return True


def test_a_pass_that_stops_at_a_case_still_moves_its_experiment_back_in_the_scan():
    store = Scripted()
    report = experiments.advance(
        store,  # type: ignore[arg-type]
        AgentRegistry([]),
        lambda t, s: None,
        "t1",
        "x1",
    )
    assert (report.scored, report.completed) == (0, False)
    assert store.advanced == [("t1", "x1")]
