"""The client's resources (``tk.turns``, ``tk.sessions``, …, ``tk.eval.experiments``):
the sync and the async client hold the same ones with the same methods, and each method
sends its route, the same from both. The transport records the request and answers a
problem, so a call ends in ``ApiError`` once its request is seen."""

from __future__ import annotations

import asyncio
import inspect
import json
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest

from turnkeep.client import ApiError, AsyncClient, Client

#: (what is called on a client, the request it sends: method, path with its query, body)
ROUTES: list[tuple[Callable[[Any], Any], str, str, Any]] = [
    (lambda c: c.turns.admit("s", "demo", "hi"), "POST", "/v1/sessions/s/turns",
     {"agent": "demo", "input": [{"role": "user", "content": "hi"}]}),
    (lambda c: c.turns.get("s", "t"), "GET", "/v1/sessions/s/turns/t", None),
    (lambda c: c.turns.cancel("s", "t"), "POST", "/v1/sessions/s/turns/t/cancel", None),
    (lambda c: c.turns.approve("s", "t", "r", "ok"), "POST", "/v1/sessions/s/turns/t/inputs/r",
     {"approved": True, "reason": "ok"}),
    (lambda c: c.turns.deny("s", "t", "r"), "POST", "/v1/sessions/s/turns/t/inputs/r",
     {"approved": False}),
    (lambda c: c.turns.answer_many("s", "t", {"r": {"approved": True}}), "POST",
     "/v1/sessions/s/turns/t/inputs",
     {"answers": [{"request_id": "r", "response": {"approved": True}}]}),
    (lambda c: c.turns.timeline("s", "t"), "GET", "/v1/sessions/s/turns/t/timeline", None),
    (lambda c: c.turns.upgrade("s", "t"), "POST", "/v1/sessions/s/turns/t/upgrade", None),
    (lambda c: c.turns.list("s", limit=2, after="x"), "GET",
     "/v1/sessions/s/turns?limit=2&after=x", None),
    (lambda c: c.turns.rerun("s", "t", 3, fork=True), "POST", "/v1/sessions/s/turns/t/rerun",
     {"from_step": 3, "fork": True}),
    (lambda c: c.sessions.get("s"), "GET", "/v1/sessions/s", None),
    (lambda c: c.sessions.list(limit=5), "GET", "/v1/sessions?limit=5", None),
    (lambda c: c.sessions.event_page("s", 4, 10), "GET", "/v1/sessions/s/events?after=4&limit=10",
     None),
    (lambda c: c.sessions.stream_token("s"), "POST", "/v1/sessions/s/stream-tokens", None),
    (lambda c: c.sessions.fork("s", 7, new_session_id="f"), "POST", "/v1/sessions/s/fork",
     {"at_seq": 7, "session_id": "f"}),
    (lambda c: c.sessions.delete("s"), "DELETE", "/v1/sessions/s", None),
    (lambda c: c.attachments.upload("s", b"hi", filename="a.txt", content_type="text/plain"),
     "POST", "/v1/sessions/s/attachments",
     {"filename": "a.txt", "content_type": "text/plain", "data_base64": "aGk="}),
    (lambda c: c.attachments.get("s", "a"), "GET", "/v1/sessions/s/attachments/a", None),
    (lambda c: c.attachments.content("s", "a"), "GET", "/v1/sessions/s/attachments/a/content",
     None),
    (lambda c: c.attachments.delete("s", "a"), "DELETE", "/v1/sessions/s/attachments/a", None),
    (lambda c: c.agents.list(), "GET", "/v1/agents", None),
    (lambda c: c.agents.versions("a b"), "GET", "/v1/agents/a%20b/versions", None),
    (lambda c: c.agents.upgrade("a", "h"), "POST", "/v1/agents/a/versions/h/upgrade", None),
    (lambda c: c.schedules.create("demo", "hi", every_seconds=60, schedule_id="d"), "POST",
     "/v1/schedules",
     {"agent": "demo", "input": [{"role": "user", "content": "hi"}], "timezone": "UTC",
      "missed": "run_once", "every_seconds": 60, "schedule_id": "d"}),
    (lambda c: c.schedules.get("d"), "GET", "/v1/schedules/d", None),
    (lambda c: c.schedules.list(after="d"), "GET", "/v1/schedules?limit=50&after=d", None),
    (lambda c: c.schedules.pause("d"), "POST", "/v1/schedules/d/pause", None),
    (lambda c: c.schedules.resume("d"), "POST", "/v1/schedules/d/resume", None),
    (lambda c: c.schedules.delete("d"), "DELETE", "/v1/schedules/d", None),
    (lambda c: c.projects.create("p", overrides={"x": 1}), "POST", "/v1/projects",
     {"overrides": {"x": 1}, "project_id": "p"}),
    (lambda c: c.projects.get("p"), "GET", "/v1/projects/p", None),
    (lambda c: c.projects.list(), "GET", "/v1/projects?limit=50", None),
    (lambda c: c.projects.update("p", {"x": 2}), "PATCH", "/v1/projects/p",
     {"overrides": {"x": 2}}),
    (lambda c: c.bindings.create(bridge="slack", agent="demo"), "POST", "/v1/bridges/bindings",
     {"bridge": "slack", "agent": "demo"}),
    (lambda c: c.bindings.list(), "GET", "/v1/bridges/bindings", None),
    (lambda c: c.bindings.revoke("b"), "DELETE", "/v1/bridges/bindings/b", None),
    (lambda c: c.feedback.give("s", "t", thumbs="up"), "POST", "/v1/sessions/s/turns/t/feedback",
     {"thumbs": "up"}),
    (lambda c: c.feedback.summary("demo"), "GET", "/v1/agents/demo/feedback", None),
    (lambda c: c.inbox.list(limit=3), "GET", "/v1/inbox?state=open&limit=3", None),
    (lambda c: c.search.turns(state=["failed"], metadata={"k": "v"}, limit=1), "GET",
     "/v1/turns?limit=1&state=failed&metadata=k%3Dv", None),
    (lambda c: c.search.sessions(created_since=datetime(2026, 1, 1, tzinfo=UTC)), "GET",
     "/v1/sessions?limit=50&created_since=2026-01-01T00%3A00%3A00%2B00%3A00", None),
    (lambda c: c.max_running.get(), "GET", "/v1/limits", None),
    (lambda c: c.max_running.set(3), "PUT", "/v1/limits", {"max_running": 3}),
    (lambda c: c.eval.datasets.create("d", [{"input": "x"}]), "POST", "/v1/datasets/d/versions",
     {"cases": [{"input": "x"}]}),
    (lambda c: c.eval.datasets.add_turns("d", [{"turn_id": "t"}], base=0), "POST",
     "/v1/datasets/d/cases", {"turns": [{"turn_id": "t"}], "base": 0}),
    (lambda c: c.eval.datasets.list(), "GET", "/v1/datasets", None),
    (lambda c: c.eval.datasets.get("d"), "GET", "/v1/datasets/d", None),
    (lambda c: c.eval.datasets.version("d", 2), "GET", "/v1/datasets/d/versions/2", None),
    (lambda c: c.eval.experiments.run("d", "demo", experiment_id="e"), "POST", "/v1/experiments",
     {"dataset": "d", "agent": "demo"}),
    (lambda c: c.eval.experiments.get("e"), "GET", "/v1/experiments/e", None),
    (lambda c: c.eval.experiments.list(agent="demo"), "GET", "/v1/experiments?limit=50&agent=demo",
     None),
    (lambda c: c.eval.experiments.cancel("e"), "POST", "/v1/experiments/e/cancel", None),
    (lambda c: c.eval.experiments.compare("a", "b"), "GET", "/v1/experiments/a/compare/b", None),
    (lambda c: c.eval.promote("demo", "2"), "POST", "/v1/agents/demo/versions/2/promote", None),
    (lambda c: c.eval.promotions("demo"), "GET", "/v1/agents/demo/promotions", None),
]  # fmt: skip


def _recorder(seen: list[tuple[str, str, Any]]) -> Callable[[httpx.Request], httpx.Response]:
    def handle(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content) if request.content else None
        seen.append((request.method, str(request.url.raw_path, "ascii"), body))
        return httpx.Response(418, json={"code": "seen", "detail": "recorded", "status": 418})

    return handle


@pytest.mark.parametrize(
    ("call", "method", "path", "body"), ROUTES, ids=[f"{m} {p}" for _, m, p, _ in ROUTES]
)
def test_each_method_sends_its_route_from_both_clients(
    call: Callable[[Any], Any], method: str, path: str, body: Any
) -> None:
    seen: list[tuple[str, str, Any]] = []
    with (
        Client("http://api", transport=httpx.MockTransport(_recorder(seen))) as tk,
        pytest.raises(ApiError, match="seen"),
    ):
        call(tk)

    async def run() -> None:
        transport = httpx.MockTransport(_recorder(seen))
        async with AsyncClient("http://api", transport=transport) as tk:
            with pytest.raises(ApiError, match="seen"):
                await call(tk)

    asyncio.run(run())
    assert seen == [(method, path, body)] * 2


def _resources(client: object, prefix: str = "") -> dict[str, object]:
    """Every resource a client holds, by its path (``eval.datasets``), nested ones too."""
    found: dict[str, object] = {}
    for name, value in vars(client).items():
        if name.startswith("_") or not type(value).__module__.startswith("turnkeep.client."):
            continue
        if type(value).__name__ == "Config":
            continue
        found[prefix + name] = value
        found.update(_resources(value, f"{prefix}{name}."))
    return found


def _methods(resource: object) -> dict[str, list[str]]:
    return {
        name: list(inspect.signature(member).parameters)
        for name, member in inspect.getmembers(resource, callable)
        if not name.startswith("_") and inspect.ismethod(member)
    }


def test_the_sync_and_async_clients_hold_the_same_resources_and_methods() -> None:
    sync, aio = _resources(Client("http://api")), _resources(AsyncClient("http://api"))
    assert sync.keys() == aio.keys()
    assert {"turns", "sessions", "schedules", "eval", "eval.datasets", "search"} <= sync.keys()
    for name, resource in sync.items():
        assert _methods(resource) == _methods(aio[name]), name
        for method, member in inspect.getmembers(aio[name], inspect.ismethod):
            if not method.startswith("_"):
                assert inspect.iscoroutinefunction(member) or inspect.isasyncgenfunction(member), (
                    f"{name}.{method}"
                )


def test_no_flat_method_is_left_on_the_clients() -> None:
    for client in (Client, AsyncClient):
        public = {n for n, m in vars(client).items() if callable(m) and not n.startswith("_")}
        assert public <= {"send", "close", "aclose"}, public
