"""The evaluation plane's methods of ``Client`` and ``AsyncClient`` (docs/evaluation.md),
as mixins the two classes inherit: each sends the request turnkeep/client/eval_calls.py
builds through the class's own ``_call``.

    with Client() as tk:
        tk.create_dataset("support-core", [{"input": {...}, "assertions": [...]}])
        exp = tk.wait_experiment(tk.run_experiment("support-core", "support", agent_version="2"))
        print(exp.summary.pass_rate, tk.compare(base.experiment_id, exp.experiment_id).fixed)
        tk.promote("support", "2")        # ApiError promotion_refused: see .problem
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from turnkeep.client import eval_calls as calls
from turnkeep.client.calls import ApiCall
from turnkeep.client.errors import ApiError
from turnkeep.evaluation import (
    AgentPromotions,
    Comparison,
    DatasetList,
    DatasetVersion,
    DatasetVersions,
    Experiment,
    ExperimentList,
    Promotion,
)

T = TypeVar("T")

#: seconds between two reads of a running experiment
POLL = 0.5


def _timed_out(experiment_id: str, timeout: float) -> ApiError:
    return ApiError("timeout", f"experiment {experiment_id} still running after {timeout:g}s")


class EvalMethods:
    """The sync client's evaluation methods."""

    def _call(self, call: ApiCall[T]) -> T:
        raise NotImplementedError

    def create_dataset(self, name: str, cases: Sequence[Mapping[str, Any]]) -> DatasetVersion:
        """A new version of ``name`` holding ``cases`` (the version already holding
        exactly them, when there is one)."""
        return self._call(calls.create_dataset(name, cases))

    def add_turns(
        self, name: str, turns: Sequence[Mapping[str, Any]], *, base: int | None = None
    ) -> DatasetVersion:
        """A new version: ``base``'s cases (default the newest; 0: none) and one per turn
        (``{"session_id", "turn_id", "assertions"?, "derive"?: ["trajectory", "output"]}``)."""
        return self._call(calls.add_turns(name, turns, base))

    def datasets(self) -> DatasetList:
        return self._call(calls.datasets())

    def dataset(self, name: str) -> DatasetVersions:
        return self._call(calls.dataset(name))

    def dataset_version(self, name: str, version: int) -> DatasetVersion:
        return self._call(calls.dataset_version(name, version))

    def run_experiment(
        self,
        dataset: str,
        agent: str,
        *,
        agent_version: str | None = None,
        dataset_version: int | None = None,
        approvals: Mapping[str, Any] | None = None,
        judge: Mapping[str, Any] | None = None,
        concurrency: int | None = None,
        recovery: bool = False,
        experiment_id: str | None = None,
    ) -> Experiment:
        """Start an experiment (idempotent by ``experiment_id``; one is made up when none
        is given, so a retried call reaches the same experiment)."""
        body = calls.experiment_body(
            dataset,
            agent,
            dataset_version=dataset_version,
            agent_version=agent_version,
            approvals=approvals,
            judge=judge,
            concurrency=concurrency,
            recovery=recovery,
        )
        return self._call(calls.run_experiment(body, experiment_id))

    def experiment(self, experiment_id: str) -> Experiment:
        return self._call(calls.experiment(experiment_id))

    def wait_experiment(self, experiment: Experiment | str, *, timeout: float = 600) -> Experiment:
        """The experiment once it is no longer running (``ApiError`` ``timeout``)."""
        eid = experiment if isinstance(experiment, str) else experiment.experiment_id
        deadline = time.monotonic() + timeout
        while True:
            found = self.experiment(eid)
            if found.state != "running":
                return found
            if time.monotonic() > deadline:
                raise _timed_out(eid, timeout)
            time.sleep(POLL)

    def experiments(
        self, *, dataset: str | None = None, agent: str | None = None, limit: int = 50
    ) -> ExperimentList:
        return self._call(calls.experiments(dataset, agent, limit))

    def cancel_experiment(self, experiment_id: str) -> Experiment:
        return self._call(calls.cancel_experiment(experiment_id))

    def compare(self, a: str, b: str) -> Comparison:
        """``b`` against ``a``, case by case."""
        return self._call(calls.compare(a, b))

    def promote(self, agent: str, version: str) -> Promotion:
        """Make ``version`` the default of ``agent``'s new turns, if its policy's checks
        pass (``ApiError`` ``promotion_refused`` listing the failed ones)."""
        return self._call(calls.promote(agent, version))

    def promotions(self, agent: str) -> AgentPromotions:
        return self._call(calls.promotions(agent))


class AsyncEvalMethods:
    """The async client's evaluation methods: the same, awaited."""

    async def _call(self, call: ApiCall[T]) -> T:
        raise NotImplementedError

    async def create_dataset(self, name: str, cases: Sequence[Mapping[str, Any]]) -> DatasetVersion:
        return await self._call(calls.create_dataset(name, cases))

    async def add_turns(
        self, name: str, turns: Sequence[Mapping[str, Any]], *, base: int | None = None
    ) -> DatasetVersion:
        return await self._call(calls.add_turns(name, turns, base))

    async def datasets(self) -> DatasetList:
        return await self._call(calls.datasets())

    async def dataset(self, name: str) -> DatasetVersions:
        return await self._call(calls.dataset(name))

    async def dataset_version(self, name: str, version: int) -> DatasetVersion:
        return await self._call(calls.dataset_version(name, version))

    async def run_experiment(
        self,
        dataset: str,
        agent: str,
        *,
        agent_version: str | None = None,
        dataset_version: int | None = None,
        approvals: Mapping[str, Any] | None = None,
        judge: Mapping[str, Any] | None = None,
        concurrency: int | None = None,
        recovery: bool = False,
        experiment_id: str | None = None,
    ) -> Experiment:
        body = calls.experiment_body(
            dataset,
            agent,
            dataset_version=dataset_version,
            agent_version=agent_version,
            approvals=approvals,
            judge=judge,
            concurrency=concurrency,
            recovery=recovery,
        )
        return await self._call(calls.run_experiment(body, experiment_id))

    async def experiment(self, experiment_id: str) -> Experiment:
        return await self._call(calls.experiment(experiment_id))

    async def wait_experiment(
        self, experiment: Experiment | str, *, timeout: float = 600
    ) -> Experiment:
        eid = experiment if isinstance(experiment, str) else experiment.experiment_id
        deadline = time.monotonic() + timeout
        while True:
            found = await self.experiment(eid)
            if found.state != "running":
                return found
            if time.monotonic() > deadline:
                raise _timed_out(eid, timeout)
            await asyncio.sleep(POLL)

    async def experiments(
        self, *, dataset: str | None = None, agent: str | None = None, limit: int = 50
    ) -> ExperimentList:
        return await self._call(calls.experiments(dataset, agent, limit))

    async def cancel_experiment(self, experiment_id: str) -> Experiment:
        return await self._call(calls.cancel_experiment(experiment_id))

    async def compare(self, a: str, b: str) -> Comparison:
        return await self._call(calls.compare(a, b))

    async def promote(self, agent: str, version: str) -> Promotion:
        return await self._call(calls.promote(agent, version))

    async def promotions(self, agent: str) -> AgentPromotions:
        return await self._call(calls.promotions(agent))
