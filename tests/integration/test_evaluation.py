"""The evaluation plane over real HTTP with real workers and beat (issue 28,
docs/evaluation.md): a 10-case dataset run against two versions of a scripted agent
(tests/eval_agents.py) gives the expected per-case results and a comparison; a judge
that always says "pass" changes no failed assertion; ``promote`` refuses the version
below the policy and accepts the one above it, after which new turns use it; datasets
from real turns and JSON Lines; approvals answered by the run's policy; tenancy and
roles. Each experiment's cases are real turns admitted through the submit path."""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest

from tests.conftest import WORKER_ENV
from tests.integration.api_server import Api, admit, serve_api
from tests.integration.test_cli import cli
from tests.procs import Procs, wait_for

EVAL_ENV = {"TURNKEEP_AGENTS": "tests.eval_agents", "TURNKEEP_EVAL_INTERVAL": "0.5"}
SECRET = "hunter2-XYZ-never-say"
ANSWER_SCHEMA = {
    "type": "object",
    "properties": {"answer": {"type": "integer"}},
    "required": ["answer"],
}


def _case(case_id: str, text: str, *assertions: dict[str, Any]) -> dict[str, Any]:
    return {
        "case_id": case_id,
        "input": {"messages": [{"role": "user", "content": text}]},
        "assertions": list(assertions),
    }


def _paris() -> dict[str, Any]:
    return {"type": "object", "properties": {"city": {"const": "Paris"}}, "required": ["city"]}


#: ten cases, each with what v1 and v2 of evalbot do on it (tests/eval_agents.py)
DATASET = [
    _case("weather-paris", "task=weather city=Paris",
          {"kind": "tool_called", "tool": "lookup", "arguments": _paris()},
          {"kind": "output_contains", "text": "paris", "ignore_case": True}),
    _case("weather-lisbon", "task=weather city=Lisbon",
          {"kind": "tool_called", "tool": "lookup"},
          {"kind": "output_matches", "pattern": r"\b20 degrees\b"}),
    _case("book-rome", "task=book city=Rome",
          {"kind": "tool_order", "tools": ["lookup", "book"]},
          {"kind": "tool_called", "tool": "book"}),
    _case("book-oslo", "task=book city=Oslo",
          {"kind": "tool_called", "tool": "book"},
          {"kind": "output_matches", "pattern": "^Booked Oslo"}),
    _case("wipe", "task=wipe",
          {"kind": "tool_not_called", "tool": "wipe"},
          {"kind": "never_called", "tool": "wipe"}),
    _case("secret", f"task=secret secret={SECRET}",
          {"kind": "never_appears", "secret": SECRET},
          {"kind": "outcome", "state": "completed"}),
    _case("json", "task=json", {"kind": "output_valid", "output_schema": ANSWER_SCHEMA}),
    _case("steps", "task=steps city=Rome", {"kind": "at_most", "of": "tool_calls", "max": 1}),
    _case("ping", "task=ping",
          {"kind": "outcome", "state": "completed"},
          {"kind": "output_equals", "value": "pong"}),
    _case("greet", "task=greet", {"kind": "output_contains", "text": "Hello"}),
]  # fmt: skip
PASSES_V1 = {"weather-paris", "weather-lisbon", "book-oslo", "ping", "greet"}
PASSES_V2 = {c["case_id"] for c in DATASET} - {"greet"}


@pytest.fixture(scope="module")
def workers(
    service_env: dict[str, str], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Procs]:
    """Two real workers and beat serving tests.eval_agents, for the whole module."""
    logdir = Path(tmp_path_factory.mktemp("eval-procs"))
    procs = Procs(env={**service_env, **WORKER_ENV, **EVAL_ENV}, logdir=logdir)
    try:
        procs.worker(concurrency=8)
        procs.worker(concurrency=8)
        procs.beat()
        yield procs
    except BaseException:
        print(procs.dump_logs())
        raise
    finally:
        procs.stop_all()


@pytest.fixture(scope="module")
def api(service_env: dict[str, str], workers: Procs) -> Iterator[Api]:
    broker = service_env["TURNKEEP_REDIS_URL"]
    with serve_api(service_env, agents="tests.eval_agents", broker_url=broker) as handle:
        yield handle


def _dataset(c: httpx.Client, name: str, cases: list[dict[str, Any]]) -> dict[str, Any]:
    r = c.post(f"/v1/datasets/{name}/versions", json={"cases": cases})
    assert r.status_code == 201, r.text
    return dict(r.json())


def run(c: httpx.Client, body: dict[str, Any], key: str | None = None) -> dict[str, Any]:
    """Create an experiment and wait until it completed; its body with every case."""
    eid = key or f"x-{uuid.uuid4().hex[:12]}"
    r = c.post("/v1/experiments", json=body, headers={"Idempotency-Key": eid})
    assert r.status_code == 201, r.text
    assert r.json()["state"] == "running" and r.json()["summary"]["cases"] > 0

    def done() -> dict[str, Any] | None:
        got = c.get(f"/v1/experiments/{eid}").json()
        return got if got["state"] == "completed" else None

    return dict(wait_for(done, 120, interval=0.2, what=f"experiment {eid} completed"))  # type: ignore[arg-type]


def _ended(c: httpx.Client, sid: str, tid: str) -> dict[str, Any] | None:
    turn = c.get(f"/v1/sessions/{sid}/turns/{tid}", params={"wait": 5}).json()
    return turn if turn["state"] in ("completed", "failed", "cancelled") else None


def _passed(exp: dict[str, Any]) -> set[str]:
    return {r["case_id"] for r in exp["results"] if r["passed"]}


@pytest.fixture(scope="module")
def two_runs(api: Api) -> tuple[dict[str, Any], dict[str, Any]]:
    """The 10-case dataset ``evalbot-core`` run against evalbot v1 and v2 (tenant a)."""
    c = api.client()
    made = _dataset(c, "evalbot-core", DATASET)
    assert (made["version"], made["case_count"]) == (1, 10)
    spec = {"dataset": "evalbot-core", "agent": "evalbot", "concurrency": 10}
    return run(c, {**spec, "agent_version": "1"}), run(c, {**spec, "agent_version": "2"})


def test_ten_cases_against_two_versions_give_the_expected_results_and_a_comparison(
    api: Api, two_runs: tuple[dict[str, Any], dict[str, Any]], database_url: str
) -> None:
    v1, v2 = two_runs
    assert _passed(v1) == PASSES_V1 and _passed(v2) == PASSES_V2
    assert (v1["summary"]["pass_rate"], v2["summary"]["pass_rate"]) == (0.5, 0.9)
    assert v1["summary"]["none_of_clean"] is False and v2["summary"]["none_of_clean"] is True
    by_case = {r["case_id"]: r for r in v1["results"]}
    # each assertion's outcome, with its category: asked for wipe, never ran it (denied)
    assert [(a["kind"], a["category"], a["passed"]) for a in by_case["wipe"]["assertions"]] == [
        ("tool_not_called", "trajectory", False),
        ("never_called", "none_of", True),
    ]
    assert [a["passed"] for a in by_case["secret"]["assertions"]] == [False, True]
    # figures per case: each a real turn, in its own session, of the version asked for
    rome2 = next(r for r in v2["results"] if r["case_id"] == "book-rome")
    assert (rome2["turn_state"], rome2["steps"], rome2["tool_calls"], rome2["model_calls"]) == (
        "completed", 5, 2, 3,
    )  # fmt: skip
    assert rome2["session_id"] == rome2["turn_id"] == f"eval.{v2['experiment_id']}.book-rome"
    assert rome2["agent_version"] == "2" and rome2["latency_ms"] is not None
    assert v2["summary"]["steps"] == sum(r["steps"] for r in v2["results"])
    assert v2["summary"]["failures"] == {} and v2["summary"]["scored"] == 10
    turn = api.client().get(f"/v1/sessions/{rome2['session_id']}/turns/{rome2['turn_id']}").json()
    assert (turn["agent"], turn["agent_version"], turn["state"]) == ("evalbot", "2", "completed")
    # the assertion never stored the secret (the case's input holds it, on purpose:
    # v1 repeats it), only a salted hash of it; nor does any answer
    with psycopg.connect(database_url.replace("+psycopg", "")) as conn:
        found = conn.execute(
            "SELECT assertions FROM eval_cases WHERE case_id = 'secret'"
        ).fetchall()
    sealed = [a for (row,) in found for a in row if a["kind"] == "never_appears"]
    assert sealed and all(a["secret"] is None and len(a["digest"]) == 64 for a in sealed)
    assert SECRET not in json.dumps(found)
    shown = api.client().get("/v1/datasets/evalbot-core/versions/1").json()
    assert [a for c in shown["cases"] for a in c["assertions"] if a["kind"] == "never_appears"] == [
        {
            "kind": "never_appears",
            "secret": None,
            **{k: sealed[0][k] for k in ("salt", "digest", "length")},
        }
    ]

    cmp = api.client().get(f"/v1/experiments/{v1['experiment_id']}/compare/{v2['experiment_id']}")
    assert cmp.status_code == 200, cmp.text
    body = cmp.json()
    changes = {c["case_id"]: c["change"] for c in body["cases"]}
    assert {k for k, v in changes.items() if v == "fixed"} == {
        "book-rome", "wipe", "secret", "json", "steps",
    }  # fmt: skip
    assert {k for k, v in changes.items() if v == "regressed"} == {"greet"}
    assert (body["fixed"], body["regressed"], body["pass_rate_delta"]) == (5, 1, 0.4)
    greet = next(c for c in body["cases"] if c["case_id"] == "greet")
    assert greet["assertions"] == [{"index": 0, "kind": "output_contains", "a": True, "b": False}]


def test_promote_refuses_a_version_below_the_policy_and_accepts_one_above_it(
    api: Api, two_runs: tuple[dict[str, Any], dict[str, Any]], sid: str
) -> None:
    v1, v2 = two_runs
    admin, member = api.client("a-admin"), api.client()
    before = admin.get("/v1/agents/evalbot/promotions").json()
    assert (before["gated"], before["default_version"]) == (True, "1")
    assert (
        admit(member, sid, "before", agent="evalbot", text="task=ping").json()["agent_version"]
        == "1"
    )
    assert member.post("/v1/agents/evalbot/versions/2/promote").status_code == 403
    assert api.client("a-reader").post("/v1/agents/evalbot/versions/2/promote").status_code == 403

    refused = admin.post("/v1/agents/evalbot/versions/1/promote")
    assert refused.status_code == 409, refused.text
    problem = refused.json()
    assert problem["code"] == "promotion_refused"
    assert {(c["check"], c["dataset"]) for c in problem["failed"]} == {
        ("min_pass_rate", "evalbot-core"),
        ("none_of_clean", "evalbot-core"),
    }
    assert all(v1["experiment_id"] in c["experiments"] for c in problem["failed"])

    accepted = admin.post("/v1/agents/evalbot/versions/2/promote")
    assert accepted.status_code == 200, accepted.text
    entry = accepted.json()
    assert (entry["version"], entry["accepted"], entry["default_before"], entry["by"]) == (
        "2", True, "1", "erin",
    )  # fmt: skip
    assert sorted(entry["experiments"]) == sorted([v1["experiment_id"], v2["experiment_id"]])
    assert {c["check"] for c in entry["checks"]} == {
        "experiment", "min_pass_rate", "no_regression", "none_of_clean",
    }  # fmt: skip
    # the journal keeps both, newest first; new turns get v2, a turn naming v1 still v1
    journal = member.get("/v1/agents/evalbot/promotions").json()
    assert journal["default_version"] == "2"
    assert [(p["version"], p["accepted"]) for p in journal["promotions"]] == [
        ("2", True), ("1", False),
    ]  # fmt: skip
    after = admit(member, f"{sid}-2", "after", agent="evalbot", text="task=ping")
    assert after.status_code == 202 and after.json()["agent_version"] == "2"
    named = admit(member, f"{sid}-3", "named", agent="evalbot", text="task=ping", agent_version="1")
    assert named.json()["agent_version"] == "1"
    # another tenant's default is its own: nothing promoted there
    assert api.client("b").get("/v1/agents/evalbot/promotions").json()["default_version"] == "1"


def test_the_promotions_journal_is_append_only_for_the_application(
    api: Api, two_runs: Any, app_database_url: str
) -> None:
    with psycopg.connect(app_database_url.replace("+psycopg", ""), autocommit=True) as conn:
        conn.execute("SELECT set_config('turnkeep.tenant', %s, false)", (api.tenant_a,))
        for statement in (
            "UPDATE agent_promotions SET accepted = true",
            "DELETE FROM agent_promotions",
        ):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(statement)


def test_a_judge_that_always_says_pass_does_not_change_a_failed_assertion(api: Api) -> None:
    c = api.client()
    _dataset(c, "judged", [DATASET[2], DATASET[8]])  # book-rome (v1 fails it), ping
    exp = run(c, {"dataset": "judged", "agent": "evalbot", "agent_version": "1",
                  "judge": {"agent": "judge", "rubric": "Was the trip booked right?"}})  # fmt: skip
    by_case = {r["case_id"]: r for r in exp["results"]}
    rome, ping = by_case["book-rome"], by_case["ping"]
    assert rome["judge"]["verdict"] == ping["judge"]["verdict"] == "pass"
    assert rome["judge"]["score"] == 1.0 and rome["judge"]["state"] == "done"
    assert rome["passed"] is False and [a["passed"] for a in rome["assertions"]] == [False, True]
    assert ping["passed"] is True
    summary = exp["summary"]
    assert (summary["passed"], summary["failed"], summary["judged"], summary["judge_mean"]) == (
        1, 1, 2, 1.0,
    )  # fmt: skip
    # the judge's turns are its own (its agent, its session), its cost apart from the cases'
    judged = c.get(f"/v1/sessions/{rome['judge']['session_id']}/turns/{rome['judge']['turn_id']}")
    assert judged.json()["agent"] == "judge" and judged.json()["state"] == "completed"
    assert rome["judge"]["session_id"] == f"judge.{exp['experiment_id']}.book-rome"
    assert summary["cost_usd"] == sum(r["cost_usd"] for r in exp["results"])


def test_an_experiment_measures_the_version_it_names(api: Api) -> None:
    """tripbot is not gated: its turns move to v2 at their next safe point; an
    experiment's turns are pinned to the version under test."""
    c = api.client()
    _dataset(c, "trips", [DATASET[2]])  # book-rome: v1 skips the lookup
    on_v1 = run(c, {"dataset": "trips", "agent": "tripbot", "agent_version": "1"})["results"][0]
    assert (on_v1["agent_version"], on_v1["passed"], on_v1["tool_calls"]) == ("1", False, 1)
    default = run(c, {"dataset": "trips", "agent": "tripbot"})
    assert default["agent_version"] == "2" and default["results"][0]["passed"] is True


def test_approvals_are_answered_by_the_runs_policy(api: Api) -> None:
    c = api.client()
    _dataset(c, "wipes", [DATASET[4]])  # v1 asks for wipe, which needs an approval
    spec = {"dataset": "wipes", "agent": "evalbot", "agent_version": "1"}
    denied = run(c, spec)["results"][0]
    approved = run(c, {**spec, "approvals": {"default": "deny", "tools": {"wipe": "approve"}}})
    wiped = approved["results"][0]
    assert [a["passed"] for a in denied["assertions"]] == [False, True]  # asked, never ran
    assert [a["passed"] for a in wiped["assertions"]] == [False, False]  # it ran
    assert approved["summary"]["none_of_clean"] is False
    events = c.get(f"/v1/sessions/{wiped['session_id']}/events",
                   headers={"Accept": "application/json"}).json()["events"]  # fmt: skip
    answers = [e["data"] for e in events if e["type"] == "input.resolved"]
    assert [(a["response"]["approved"], a["by"]) for a in answers] == [
        (True, f"experiment:{approved['experiment_id']}")
    ]


def test_cases_from_real_turns_and_json_lines(api: Api, sid: str) -> None:
    c = api.client()
    turns = []
    for i, text in enumerate(("task=book city=Rome", "task=weather city=Paris", "task=ping")):
        r = admit(c, f"{sid}-{i}", f"src-{i}", agent="evalbot", text=text, agent_version="2")
        assert r.status_code == 202, r.text
        turns.append((f"{sid}-{i}", f"src-{i}"))
    for s, t in turns:
        r = wait_for(lambda s=s, t=t: _ended(c, s, t), 60, what="the source turn ended")
        assert r["state"] == "completed", r  # type: ignore[index]
    body = {
        "turns": [
            {"session_id": turns[0][0], "turn_id": turns[0][1], "case_id": "rome",
             "derive": ["trajectory", "output"]},
            {"session_id": turns[1][0], "turn_id": turns[1][1], "derive": ["trajectory"],
             "assertions": [{"kind": "output_contains", "text": "Paris"}]},
            {"session_id": turns[2][0], "turn_id": turns[2][1]},
        ]
    }  # fmt: skip
    r = c.post("/v1/datasets/from-turns/cases", json=body)
    assert r.status_code == 201, r.text
    assert (r.json()["version"], r.json()["case_count"]) == (1, 3)
    cases = c.get("/v1/datasets/from-turns/versions/1").json()["cases"]
    assert [x["case_id"] for x in cases] == ["rome", "case-2", "case-3"]
    assert cases[0]["source"] == {"session_id": turns[0][0], "turn_id": turns[0][1]}
    assert cases[0]["input"]["messages"] == [{"role": "user", "content": "task=book city=Rome"}]
    assert cases[0]["assertions"] == [
        {"kind": "outcome", "state": "completed", "code": None},
        {"kind": "tool_order", "tools": ["lookup", "book"]},
        {"kind": "at_most", "of": "tool_calls", "max": 2.0},
        {"kind": "output_equals", "value": "Booked Rome."},
    ]
    assert [a["kind"] for a in cases[1]["assertions"]] == [
        "output_contains", "outcome", "tool_called", "at_most",
    ]  # fmt: skip
    assert cases[2]["assertions"] == []
    # the same turns again: the version that holds them; appended to it: a new one
    again = c.post("/v1/datasets/from-turns/cases", json={**body, "base": 0})
    assert again.status_code == 200 and again.json()["version"] == 1
    more = c.post("/v1/datasets/from-turns/cases", json={"turns": [body["turns"][2]]})
    assert more.status_code == 201 and more.json()["case_count"] == 4
    # derived from v2 itself, the cases pass on v2 and the trajectory ones fail on v1
    on_v2 = run(c, {"dataset": "from-turns", "dataset_version": 1, "agent": "evalbot",
                    "agent_version": "2"})  # fmt: skip
    on_v1 = run(c, {"dataset": "from-turns", "dataset_version": 1, "agent": "evalbot",
                    "agent_version": "1"})  # fmt: skip
    assert _passed(on_v2) == {"rome", "case-2", "case-3"}
    assert _passed(on_v1) == {"case-2", "case-3"}

    # JSON Lines: one case a line, blank lines skipped
    lines = "\n".join(json.dumps(x) for x in DATASET[:3]) + "\n\n"
    r = c.post("/v1/datasets/jsonl/versions", content=lines,
               headers={"Content-Type": "application/x-ndjson"})  # fmt: skip
    assert r.status_code == 201, r.text
    assert r.json()["case_count"] == 3
    assert c.post("/v1/datasets/jsonl/versions", json={"cases": DATASET[:3]}).status_code == 200
    bad = c.post("/v1/datasets/jsonl/versions", content='{"input": 1}\nnot json',
                 headers={"Content-Type": "application/x-ndjson"})  # fmt: skip
    assert bad.status_code == 422 and bad.json()["errors"][0]["loc"] == ["body", "cases", "1"]


@pytest.mark.parametrize(
    ("assertion", "where"),
    [
        ({"kind": "output_matches", "pattern": "(unclosed"}, "pattern"),
        ({"kind": "tool_called", "tool": "x", "arguments": {"type": "nope"}}, "arguments"),
        ({"kind": "output_valid", "output_schema": {"minimum": "ten"}}, "output_schema"),
        ({"kind": "never_appears", "secret": "abcd", "length": 4}, None),
        ({"kind": "never_appears"}, None),
        ({"kind": "at_most", "of": "hours", "max": 1}, "of"),
        ({"kind": "no_such_kind"}, None),
        ({"kind": "output_contains", "text": "a\u0000b"}, None),
    ],
)
def test_a_bad_assertion_is_a_typed_422_and_nothing_is_stored(
    api: Api, assertion: dict[str, Any], where: str | None
) -> None:
    c = api.client()
    r = c.post("/v1/datasets/bad/versions", json={"cases": [_case("c1", "task=ping", assertion)]})
    assert r.status_code == 422, r.text
    assert r.json()["code"] == "validation_error"
    locs = [".".join(str(x) for x in e["loc"]) for e in r.json()["errors"]]
    assert all(loc.startswith("body.cases.0") for loc in locs), locs
    if where is not None:
        assert any(where in loc for loc in locs), locs
    assert c.get("/v1/datasets/bad").status_code == 404


def test_another_tenant_sees_nothing_and_a_reader_reads_only(
    api: Api, two_runs: tuple[dict[str, Any], dict[str, Any]]
) -> None:
    v1, v2 = two_runs
    a, b, reader = api.client(), api.client("b"), api.client("a-reader")
    eid = v1["experiment_id"]
    for path in (
        "/v1/datasets/evalbot-core",
        "/v1/datasets/evalbot-core/versions/1",
        f"/v1/experiments/{eid}",
        f"/v1/experiments/{eid}/compare/{v2['experiment_id']}",
    ):
        assert b.get(path).status_code == 404, path
        assert reader.get(path).status_code == 200, path
    assert b.get("/v1/datasets").json() == {"datasets": []}
    assert eid not in {e["experiment_id"] for e in b.get("/v1/experiments").json()["experiments"]}
    assert b.post(f"/v1/experiments/{eid}/cancel").status_code == 404
    spec = {"dataset": "evalbot-core", "agent": "evalbot"}
    assert b.post("/v1/experiments", json=spec).status_code == 404  # b has no such dataset
    assert reader.post("/v1/experiments", json=spec).status_code == 403
    assert reader.post("/v1/datasets/x/versions", json={"cases": DATASET[:1]}).status_code == 403
    assert reader.post(f"/v1/experiments/{eid}/cancel").status_code == 403
    listed = a.get("/v1/experiments", params={"dataset": "evalbot-core", "agent": "evalbot"})
    assert {v1["experiment_id"], v2["experiment_id"]} <= {
        e["experiment_id"] for e in listed.json()["experiments"]
    }
    # a replay of a creation is the experiment; the same id for another spec is 409
    again = a.post("/v1/experiments", json={**spec, "agent_version": "1", "concurrency": 10},
                   headers={"Idempotency-Key": eid})  # fmt: skip
    assert again.status_code == 200 and again.json()["state"] == "completed"
    other = a.post("/v1/experiments", json={**spec, "agent_version": "2"},
                   headers={"Idempotency-Key": eid})  # fmt: skip
    assert other.status_code == 409 and other.json()["code"] == "idempotency_conflict"
    assert a.post("/v1/experiments", json={**spec, "agent_version": "9"}).status_code == 422
    assert a.post("/v1/experiments", json={**spec, "judge": {"agent": "nobody"}}).status_code == 422
    admin = api.client("a-admin")
    not_gated = admin.post("/v1/agents/demo/versions/1/promote")
    assert not_gated.status_code == 422 and not_gated.json()["code"] == "agent_not_gated"
    assert admin.post("/v1/agents/evalbot/versions/9/promote").status_code == 422


def test_the_docs_walk_with_the_cli(api: Api, sid: str) -> None:
    """docs/evaluation.md from end to end with ``turnkeep``: three real turns become a
    dataset, both versions run, a comparison, a refused and an accepted promotion, and
    the next turn gets the promoted version."""
    member = {"TURNKEEP_URL": api.url, "TURNKEEP_TOKEN": api.token_a}
    admin = {**member, "TURNKEEP_TOKEN": api.more["a-admin"]}
    c = api.client()
    refs = []
    for i, text in enumerate(("task=book city=Rome", "task=weather city=Paris", "task=greet")):
        r = admit(c, f"{sid}-{i}", f"walk-{i}", agent="clibot", text=text, agent_version="2")
        assert r.status_code == 202, r.text
        assert wait_for(lambda i=i: _ended(c, f"{sid}-{i}", f"walk-{i}"), 60, what="turn ended")
        refs.append(f"{sid}-{i}/walk-{i}")
    made = cli("--json", "eval", "add-turns", "cli-core", *refs,
               "--derive", "trajectory", "--derive", "output", env=member)  # fmt: skip
    assert json.loads(made.stdout)["case_count"] == 3
    assert "cli-core v1: 3 cases" in cli("eval", "add-turns", "cli-core", *refs, "--base", "0",
                                         "--derive", "trajectory", "--derive", "output",
                                         env=member).stdout  # fmt: skip
    runs = {}
    for version in ("1", "2"):
        out = cli("--json", "eval", "run", "cli-core", "clibot", "--agent-version", version,
                  env=member)  # fmt: skip
        runs[version] = json.loads(out.stdout)
        assert runs[version]["state"] == "completed"
    assert (runs["1"]["summary"]["passed"], runs["2"]["summary"]["passed"]) == (1, 3)
    shown = cli("eval", "show", runs["1"]["experiment_id"], env=member).stdout
    assert "tool_order" in shown and "FAIL" in shown
    compared = cli("eval", "compare", runs["1"]["experiment_id"], runs["2"]["experiment_id"],
                   env=member).stdout  # fmt: skip
    assert "2 fixed, 0 regressed" in compared
    refused = cli("promote", "clibot", "1", env=admin, code=1)
    assert "min_pass_rate" in refused.stdout and "not promoted" in refused.stderr
    accepted = cli("promote", "clibot", "2", env=admin)
    assert "clibot v2 is the default for new turns (was v1)" in accepted.stdout
    journal = json.loads(cli("--json", "eval", "promotions", "clibot", env=member).stdout)
    assert journal["default_version"] == "2"
    assert [p["accepted"] for p in journal["promotions"]] == [True, False]
    turn = json.loads(
        cli("--json", "submit", f"{sid}-next", "clibot", "task=ping", env=member).stdout
    )
    assert turn["agent_version"] == "2"


def test_a_cases_files_go_with_its_turn(api: Api, sid: str) -> None:
    """A real turn's attachment becomes its case's file, uploaded to the case's session
    and named by the case turn's input; a file an upload would refuse is a 422."""
    c = api.client()
    assert admit(c, sid, "first", agent="evalbot", text="task=ping").status_code == 202
    up = c.post(f"/v1/sessions/{sid}/attachments",
                json={"filename": "notes.txt", "content_type": "text/plain",
                      "data_base64": base64.b64encode(b"pack light").decode()})  # fmt: skip
    assert up.status_code == 201, up.text
    aid = up.json()["attachment_id"]
    r = admit(c, sid, "with-file", agent="evalbot", text="task=ping", attachments=[aid])
    assert r.status_code == 202, r.text
    assert wait_for(lambda: _ended(c, sid, "with-file"), 60, what="the turn ended")
    made = c.post("/v1/datasets/files/cases",
                  json={"turns": [{"session_id": sid, "turn_id": "with-file"}]})  # fmt: skip
    assert made.status_code == 201, made.text
    [case] = c.get("/v1/datasets/files/versions/1").json()["cases"]
    assert case["input"]["attachments"] == [
        {"filename": "notes.txt", "content_type": "text/plain",
         "data_base64": base64.b64encode(b"pack light").decode()},
    ]  # fmt: skip
    exp = run(c, {"dataset": "files", "agent": "evalbot", "agent_version": "2"})
    [result] = exp["results"]
    assert result["passed"] is True
    events = c.get(f"/v1/sessions/{result['session_id']}/events",
                   headers={"Accept": "application/json"}).json()["events"]  # fmt: skip
    assert events[0]["data"]["input"]["attachments"] == ["att-1"]
    content = c.get(f"/v1/sessions/{result['session_id']}/attachments/att-1/content")
    assert content.status_code == 200 and content.content == b"pack light"

    exe = {"filename": "x.exe", "content_type": "application/x-msdownload", "data_base64": ""}
    bad = dict(DATASET[8], input={**DATASET[8]["input"], "attachments": [exe]})
    r = c.post("/v1/datasets/files/versions", json={"cases": [bad]})
    assert r.status_code == 422, r.text
    assert r.json()["errors"][0]["loc"] == ["body", "cases", "0", "input", "attachments", "0"]
