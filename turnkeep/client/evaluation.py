"""``client.eval``: the evaluation plane (docs/evaluation.md): ``eval.datasets``
(versioned cases), ``eval.experiments`` (a dataset's cases run on an agent version,
compared), and ``eval.promote`` (a version made the default through its policy). The
calls are built here without I/O; the sync classes send them through ``Client``, the
``Async`` ones through ``AsyncClient``.

    with Client() as tk:
        tk.eval.datasets.create("support-core", [{"input": {...}, "assertions": [...]}])
        exp = tk.eval.experiments.wait(
            tk.eval.experiments.run("support-core", "support", agent_version="2")
        )
        print(exp.summary.pass_rate, tk.eval.experiments.compare(base_id, exp.experiment_id).fixed)
        tk.eval.promote("support", "2")        # ApiError promotion_refused: see .problem
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

import anyio

from turnkeep.client import agents, calls
from turnkeep.client.calls import ApiCall, AsyncSend, Send
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

#: seconds between two reads of a running experiment
POLL = 0.5

_q = calls.segment
_version = calls.reader(DatasetVersion)
_experiment = calls.reader(Experiment)


# -- the calls ---------------------------------------------------------------------------


def create_dataset(name: str, cases: Sequence[Mapping[str, Any]]) -> ApiCall[DatasetVersion]:
    body = {"cases": [dict(c) for c in cases]}
    return ApiCall("POST", f"/v1/datasets/{_q(name)}/versions", _version, json=body)


def add_turns(
    name: str, turns: Sequence[Mapping[str, Any]], base: int | None
) -> ApiCall[DatasetVersion]:
    body: dict[str, Any] = {"turns": [dict(t) for t in turns]}
    if base is not None:
        body["base"] = base
    return ApiCall("POST", f"/v1/datasets/{_q(name)}/cases", _version, json=body)


def datasets() -> ApiCall[DatasetList]:
    return ApiCall("GET", "/v1/datasets", calls.reader(DatasetList))


def dataset(name: str) -> ApiCall[DatasetVersions]:
    return ApiCall("GET", f"/v1/datasets/{_q(name)}", calls.reader(DatasetVersions))


def dataset_version(name: str, version: int) -> ApiCall[DatasetVersion]:
    return ApiCall("GET", f"/v1/datasets/{_q(name)}/versions/{int(version)}", _version)


def experiment_body(
    dataset: str,
    agent: str,
    *,
    dataset_version: int | None,
    agent_version: str | None,
    approvals: Mapping[str, Any] | None,
    judge: Mapping[str, Any] | None,
    concurrency: int | None,
    recovery: bool,
) -> dict[str, Any]:
    """``POST /v1/experiments``'s body: what is not given is left to the API."""
    given = {
        "dataset": dataset,
        "agent": agent,
        "dataset_version": dataset_version,
        "agent_version": agent_version,
        "approvals": None if approvals is None else dict(approvals),
        "judge": None if judge is None else dict(judge),
        "concurrency": concurrency,
        "recovery": recovery or None,
    }
    return {k: v for k, v in given.items() if v is not None}


def run_experiment(body: Mapping[str, Any], experiment_id: str | None) -> ApiCall[Experiment]:
    headers = calls.key(experiment_id)
    return ApiCall("POST", "/v1/experiments", _experiment, headers=headers, json=dict(body))


def experiment(experiment_id: str) -> ApiCall[Experiment]:
    return ApiCall("GET", f"/v1/experiments/{_q(experiment_id)}", _experiment)


def experiments(dataset: str | None, agent: str | None, limit: int) -> ApiCall[ExperimentList]:
    params: dict[str, str | int] = {"limit": limit}
    if dataset is not None:
        params["dataset"] = dataset
    if agent is not None:
        params["agent"] = agent
    return ApiCall("GET", "/v1/experiments", calls.reader(ExperimentList), params=params)


def cancel_experiment(experiment_id: str) -> ApiCall[Experiment]:
    return ApiCall("POST", f"/v1/experiments/{_q(experiment_id)}/cancel", _experiment)


def compare(a: str, b: str) -> ApiCall[Comparison]:
    return ApiCall("GET", f"/v1/experiments/{_q(a)}/compare/{_q(b)}", calls.reader(Comparison))


def promote(agent: str, version: str) -> ApiCall[Promotion]:
    path = agents.path(agent, f"/versions/{_q(version)}/promote")
    return ApiCall("POST", path, calls.reader(Promotion))


def promotions(agent: str) -> ApiCall[AgentPromotions]:
    return ApiCall("GET", agents.path(agent, "/promotions"), calls.reader(AgentPromotions))


def _timed_out(experiment_id: str, timeout: float) -> ApiError:
    return ApiError("timeout", f"experiment {experiment_id} still running after {timeout:g}s")


def _id(experiment: Experiment | str) -> str:
    return experiment if isinstance(experiment, str) else experiment.experiment_id


# -- the sync client's -------------------------------------------------------------------


class DatasetsApi:
    """``client.eval.datasets`` of the sync client."""

    def __init__(self, send: Send) -> None:
        self._send = send

    def create(self, name: str, cases: Sequence[Mapping[str, Any]]) -> DatasetVersion:
        """A new version of ``name`` holding ``cases`` (the version already holding
        exactly them, when there is one)."""
        return self._send(create_dataset(name, cases))

    def add_turns(
        self, name: str, turns: Sequence[Mapping[str, Any]], *, base: int | None = None
    ) -> DatasetVersion:
        """A new version: ``base``'s cases (default the newest; 0: none) and one per turn
        (``{"session_id", "turn_id", "assertions"?, "derive"?: ["trajectory", "output"]}``)."""
        return self._send(add_turns(name, turns, base))

    def get(self, name: str) -> DatasetVersions:
        return self._send(dataset(name))

    def version(self, name: str, version: int) -> DatasetVersion:
        return self._send(dataset_version(name, version))

    def list(self) -> DatasetList:
        return self._send(datasets())


class ExperimentsApi:
    """``client.eval.experiments`` of the sync client."""

    def __init__(self, send: Send) -> None:
        self._send = send

    def run(
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
        body = experiment_body(
            dataset,
            agent,
            dataset_version=dataset_version,
            agent_version=agent_version,
            approvals=approvals,
            judge=judge,
            concurrency=concurrency,
            recovery=recovery,
        )
        return self._send(run_experiment(body, experiment_id))

    def get(self, experiment_id: str) -> Experiment:
        return self._send(experiment(experiment_id))

    def wait(self, experiment: Experiment | str, *, timeout: float = 600) -> Experiment:
        """The experiment once it is no longer running (``ApiError`` ``timeout``)."""
        eid = _id(experiment)
        deadline = time.monotonic() + timeout
        while True:
            found = self.get(eid)
            if found.state != "running":
                return found
            if time.monotonic() > deadline:
                raise _timed_out(eid, timeout)
            time.sleep(POLL)

    def list(
        self, *, dataset: str | None = None, agent: str | None = None, limit: int = 50
    ) -> ExperimentList:
        return self._send(experiments(dataset, agent, limit))

    def cancel(self, experiment_id: str) -> Experiment:
        return self._send(cancel_experiment(experiment_id))

    def compare(self, a: str, b: str) -> Comparison:
        """``b`` against ``a``, case by case."""
        return self._send(compare(a, b))


class EvalApi:
    """``client.eval`` of the sync client."""

    def __init__(self, send: Send) -> None:
        self._send = send
        self.datasets = DatasetsApi(send)
        self.experiments = ExperimentsApi(send)

    def promote(self, agent: str, version: str) -> Promotion:
        """Make ``version`` the default of ``agent``'s new turns, if its policy's checks
        pass (``ApiError`` ``promotion_refused`` listing the failed ones)."""
        return self._send(promote(agent, version))

    def promotions(self, agent: str) -> AgentPromotions:
        return self._send(promotions(agent))


# -- the async client's: the same, awaited ------------------------------------------------


class AsyncDatasetsApi:
    """``client.eval.datasets`` of the async client: ``DatasetsApi``'s methods, awaited."""

    def __init__(self, send: AsyncSend) -> None:
        self._send = send

    async def create(self, name: str, cases: Sequence[Mapping[str, Any]]) -> DatasetVersion:
        return await self._send(create_dataset(name, cases))

    async def add_turns(
        self, name: str, turns: Sequence[Mapping[str, Any]], *, base: int | None = None
    ) -> DatasetVersion:
        return await self._send(add_turns(name, turns, base))

    async def get(self, name: str) -> DatasetVersions:
        return await self._send(dataset(name))

    async def version(self, name: str, version: int) -> DatasetVersion:
        return await self._send(dataset_version(name, version))

    async def list(self) -> DatasetList:
        return await self._send(datasets())


class AsyncExperimentsApi:
    """``client.eval.experiments`` of the async client: ``ExperimentsApi``'s methods, awaited."""

    def __init__(self, send: AsyncSend) -> None:
        self._send = send

    async def run(
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
        body = experiment_body(
            dataset,
            agent,
            dataset_version=dataset_version,
            agent_version=agent_version,
            approvals=approvals,
            judge=judge,
            concurrency=concurrency,
            recovery=recovery,
        )
        return await self._send(run_experiment(body, experiment_id))

    async def get(self, experiment_id: str) -> Experiment:
        return await self._send(experiment(experiment_id))

    async def wait(self, experiment: Experiment | str, *, timeout: float = 600) -> Experiment:
        eid = _id(experiment)
        deadline = time.monotonic() + timeout
        while True:
            found = await self.get(eid)
            if found.state != "running":
                return found
            if time.monotonic() > deadline:
                raise _timed_out(eid, timeout)
            await anyio.sleep(POLL)

    async def list(
        self, *, dataset: str | None = None, agent: str | None = None, limit: int = 50
    ) -> ExperimentList:
        return await self._send(experiments(dataset, agent, limit))

    async def cancel(self, experiment_id: str) -> Experiment:
        return await self._send(cancel_experiment(experiment_id))

    async def compare(self, a: str, b: str) -> Comparison:
        return await self._send(compare(a, b))


class AsyncEvalApi:
    """``client.eval`` of the async client: ``EvalApi``'s methods, awaited."""

    def __init__(self, send: AsyncSend) -> None:
        self._send = send
        self.datasets = AsyncDatasetsApi(send)
        self.experiments = AsyncExperimentsApi(send)

    async def promote(self, agent: str, version: str) -> Promotion:
        return await self._send(promote(agent, version))

    async def promotions(self, agent: str) -> AgentPromotions:
        return await self._send(promotions(agent))
