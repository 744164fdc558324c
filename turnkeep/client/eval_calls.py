"""The evaluation plane's requests, without I/O (as turnkeep/client/calls.py builds the
turn's): datasets, experiments, a comparison, promotions (docs/evaluation.md)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import quote

from turnkeep.client.calls import ApiCall, _key, _reader
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


def _q(value: str) -> str:
    return quote(value, safe="")


def create_dataset(name: str, cases: Sequence[Mapping[str, Any]]) -> ApiCall[DatasetVersion]:
    body = {"cases": [dict(c) for c in cases]}
    return ApiCall("POST", f"/v1/datasets/{_q(name)}/versions", _reader(DatasetVersion), json=body)


def add_turns(
    name: str, turns: Sequence[Mapping[str, Any]], base: int | None
) -> ApiCall[DatasetVersion]:
    body: dict[str, Any] = {"turns": [dict(t) for t in turns]}
    if base is not None:
        body["base"] = base
    return ApiCall("POST", f"/v1/datasets/{_q(name)}/cases", _reader(DatasetVersion), json=body)


def datasets() -> ApiCall[DatasetList]:
    return ApiCall("GET", "/v1/datasets", _reader(DatasetList))


def dataset(name: str) -> ApiCall[DatasetVersions]:
    return ApiCall("GET", f"/v1/datasets/{_q(name)}", _reader(DatasetVersions))


def dataset_version(name: str, version: int) -> ApiCall[DatasetVersion]:
    path = f"/v1/datasets/{_q(name)}/versions/{int(version)}"
    return ApiCall("GET", path, _reader(DatasetVersion))


def run_experiment(body: Mapping[str, Any], experiment_id: str | None) -> ApiCall[Experiment]:
    headers = _key(experiment_id)
    return ApiCall("POST", "/v1/experiments", _reader(Experiment), headers=headers, json=dict(body))


def experiment(experiment_id: str) -> ApiCall[Experiment]:
    return ApiCall("GET", f"/v1/experiments/{_q(experiment_id)}", _reader(Experiment))


def experiments(dataset: str | None, agent: str | None, limit: int) -> ApiCall[ExperimentList]:
    params: dict[str, str | int] = {"limit": limit}
    if dataset is not None:
        params["dataset"] = dataset
    if agent is not None:
        params["agent"] = agent
    return ApiCall("GET", "/v1/experiments", _reader(ExperimentList), params=params)


def cancel_experiment(experiment_id: str) -> ApiCall[Experiment]:
    path = f"/v1/experiments/{_q(experiment_id)}/cancel"
    return ApiCall("POST", path, _reader(Experiment))


def compare(a: str, b: str) -> ApiCall[Comparison]:
    return ApiCall("GET", f"/v1/experiments/{_q(a)}/compare/{_q(b)}", _reader(Comparison))


def promote(agent: str, version: str) -> ApiCall[Promotion]:
    path = f"/v1/agents/{_q(agent)}/versions/{_q(version)}/promote"
    return ApiCall("POST", path, _reader(Promotion))


def promotions(agent: str) -> ApiCall[AgentPromotions]:
    return ApiCall("GET", f"/v1/agents/{_q(agent)}/promotions", _reader(AgentPromotions))


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
