"""The ``turnkeep`` console script pyproject.toml declares, installed and run as a
subprocess: the process commands become the real process (migrations on a fresh
database, the API, Flower), and the client commands drive a live stack (the API as
a uvicorn process, a real celery worker, the test agents) over HTTP.

Every invocation's output is captured (not a terminal), so each is also checked to
be plain: no escape sequences.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import psycopg
import pytest

from tests.conftest import PG_ADMIN, WORKER_ENV, app_url
from tests.procs import PORT_TAKEN, PortTaken, Procs, free_port, on_free_port
from turnkeep.api.auth import token_digest
from turnkeep.client import ApiError, AsyncClient, Client

TURNKEEP = str(Path(sys.executable).with_name("turnkeep"))
#: what would make rich colour a pipe anyway
_FORCING = ("FORCE_COLOR", "TTY_COMPATIBLE", "CLICOLOR_FORCE", "COLUMNS")
COMMANDS = (
    *("api", "worker", "beat", "flower", "migrate", "acp", "dev"),
    *("submit", "tail", "show", "answer", "approve", "deny", "cancel", "fork", "rerun"),
    *("sessions", "turns", "inbox", "projects", "tokens", "schedules", "search"),
    *("agents", "versions", "upgrade", "feedback", "scores"),
    *("submit", "tail", "show", "answer", "approve", "deny", "cancel", "fork"),
    *("sessions", "turns", "projects", "tokens"),
    *("agents", "versions", "upgrade"),
    "bindings",
    *("eval", "promote"),
    "delete",
    "limits",
)


def _env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _FORCING}
    return {**env, **(extra or {})}


def cli(
    *args: str, env: dict[str, str] | None = None, code: int = 0, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    """``turnkeep <args>``: its exit status must be ``code``, its output plain."""
    run = subprocess.run(
        [TURNKEEP, *args],
        env=_env(env),
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == code, f"exit {run.returncode}\n{run.stdout}\n{run.stderr}"
    assert "\x1b" not in run.stdout + run.stderr, "escape sequences in piped output"
    return run


# -- the processes -----------------------------------------------------------------------


def test_help_lists_every_command_and_no_command_is_a_usage_error():
    out = cli("--help").stdout
    assert "Usage: turnkeep" in out
    listed = {
        line.split()[0] for line in out.splitlines() if line.startswith("  ") and line.split()
    }
    assert set(COMMANDS) <= listed
    assert "new" in cli("tokens", "--help").stdout
    bare = cli(code=2)
    assert "Usage: turnkeep" in bare.stdout + bare.stderr
    # the module runs as well as the console script
    module = subprocess.run(
        [sys.executable, "-m", "turnkeep.cli", "--help"], capture_output=True, text=True
    )
    assert module.returncode == 0 and "submit" in module.stdout


def test_migrate_brings_a_fresh_database_to_head():
    name = f"turnkeep_cli_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    base = PG_ADMIN.rsplit("/", 1)[0]
    try:
        # migrations run as the owner (TURNKEEP_MIGRATE_URL), not the application's role
        cli(
            "migrate",
            env={
                "TURNKEEP_MIGRATE_URL": f"{base}/{name}",
                "TURNKEEP_DATABASE_URL": app_url(f"{base}/{name}"),
            },
        )
        with psycopg.connect(f"{base}/{name}") as conn:
            tables = {r[0] for r in conn.execute("SELECT tablename FROM pg_tables").fetchall()}
        assert {"sessions", "turns", "events", "alembic_version"} <= tables
    finally:
        with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _answering(proc: subprocess.Popen[bytes], url: str, *, timeout: float) -> httpx.Response:
    """The first answer from ``url`` while ``proc`` runs; PortTaken when it exited
    because another process took its port (a free port, but only a moment ago)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return httpx.get(url, timeout=2)
        except httpx.TransportError:
            if proc.poll() is not None:
                err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
                if any(s in err.lower() for s in PORT_TAKEN):
                    raise PortTaken(err) from None
                raise AssertionError(f"exited {proc.returncode}: {err}") from None
            assert time.monotonic() < deadline, f"no answer from {url}"
            time.sleep(0.2)


def test_api_serves_with_its_arguments_passed_through(service_env):
    def start(port: int) -> tuple[int, subprocess.Popen[bytes], httpx.Response]:
        proc = subprocess.Popen(
            [TURNKEEP, "api", "--port", str(port), "--log-level", "warning"],
            env={**os.environ, **service_env},
            stderr=subprocess.PIPE,
        )
        return port, proc, _answering(proc, f"http://127.0.0.1:{port}/healthz", timeout=30)

    port, proc, r = on_free_port(start)
    try:
        assert r.status_code == 200 and r.json() == {"status": "ok"}
        # the process became uvicorn itself, its arguments as given
        cmdline = Path(f"/proc/{proc.pid}/cmdline").read_bytes().split(b"\0")
        assert b"uvicorn" in cmdline and str(port).encode() in cmdline
    finally:
        proc.terminate()
        proc.wait(timeout=15)


def _flower(env: dict[str, str], port: int) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [TURNKEEP, "flower", f"--port={port}"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


def test_flower_answers_only_with_its_credentials(service_env):
    env = {**os.environ, **service_env, "TURNKEEP_FLOWER_BASIC_AUTH": "ops:s3cret"}
    for name in ("TURNKEEP_FLOWER_UNSAFE_NOAUTH", "TURNKEEP_FLOWER_ADDRESS", "FLOWER_BASIC_AUTH"):
        env.pop(name, None)

    def start(port: int) -> tuple[str, subprocess.Popen[bytes], httpx.Response]:
        proc = _flower(env, port)
        base = f"http://127.0.0.1:{port}"
        return base, proc, _answering(proc, f"{base}/", timeout=60)

    base, proc, anonymous = on_free_port(start)
    try:
        assert anonymous.status_code == 401
        assert httpx.get(f"{base}/", auth=("ops", "wrong"), timeout=10).status_code == 401
        assert httpx.get(f"{base}/", auth=("ops", "s3cret"), timeout=10).status_code == 200
        # the password is handed over in the environment, never on the command line
        cmdline = Path(f"/proc/{proc.pid}/cmdline").read_bytes().decode()
        assert "s3cret" not in cmdline and "--address=127.0.0.1" in cmdline
    finally:
        proc.terminate()
        proc.wait(timeout=15)


def test_flower_refuses_to_start_without_authentication(service_env):
    env = {**service_env, "TURNKEEP_FLOWER_BASIC_AUTH": "", "TURNKEEP_FLOWER_UNSAFE_NOAUTH": ""}
    run = cli("flower", f"--port={free_port()}", env=env, code=2)
    assert "without authentication" in run.stderr


# -- the client commands, on a live stack --------------------------------------------------


@dataclass
class Stack:
    url: str
    token: str
    tenant: str
    procs: Procs

    @property
    def env(self) -> dict[str, str]:
        return {"TURNKEEP_URL": self.url, "TURNKEEP_TOKEN": self.token}

    def run(self, *args: str, code: int = 0) -> subprocess.CompletedProcess[str]:
        return cli(*args, env=self.env, code=code)

    def client(self) -> Client:
        return Client(self.url, self.token)


@pytest.fixture(scope="module")
def stack(
    request: pytest.FixtureRequest,
    service_env: dict[str, str],
    effects_tables: None,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Stack]:
    """The API (with one tenant's token and a stream token secret) and one worker, the
    test agents on both."""
    token, tenant = f"tk_cli_{uuid.uuid4().hex}", f"t-cli-{uuid.uuid4().hex[:8]}"
    tokens = [{"sha256": token_digest(token), "tenant": tenant, "subject": "cli"}]
    procs = Procs(env={**service_env, **WORKER_ENV}, logdir=tmp_path_factory.mktemp("cli"))
    failed = request.session.testsfailed
    try:
        api = procs.api(
            {
                "TURNKEEP_TOKENS": json.dumps(tokens),
                "TURNKEEP_STREAM_TOKEN_SECRET": uuid.uuid4().hex,
            }
        )
        procs.worker()
        yield Stack(api.url, token, tenant, procs)
    finally:
        procs.stop_all()
        if request.session.testsfailed > failed:
            print(procs.dump_logs())


def _sid() -> str:
    return f"cli-{uuid.uuid4().hex[:8]}"


def _parked(stack: Stack, agent: str) -> tuple[str, dict[str, object]]:
    """A turn of ``agent`` submitted with --wait, which returns once it waits for input."""
    sid = _sid()
    turn = json.loads(stack.run("--json", "submit", sid, agent, "go", "--wait").stdout)
    assert turn["state"] == "waiting" and turn["pending_input"], turn
    return sid, turn


def test_submit_wait_prints_the_completed_turn(stack):
    sid = _sid()
    run = stack.run("submit", sid, "demo", "What is the weather in Lisbon?", "--wait", "--json")
    turn = json.loads(run.stdout)
    assert turn["state"] == "completed" and "Lisbon" in turn["result"]["text"]
    # the same idempotency key reaches the same turn; plain output names it
    again = stack.run(
        "submit",
        sid,
        "demo",
        "What is the weather in Lisbon?",
        "--wait",
        "--idempotency-key",
        turn["turn_id"],
    )
    assert f"turn {turn['turn_id']}  completed" in again.stdout
    assert "result: In Lisbon it is 9 degrees" in again.stdout
    # messages from a file (stdin here)
    messages = json.dumps([{"role": "user", "content": "What is the weather in Oslo?"}])
    run = cli("--json", "submit", sid, "demo", "-f", "-", "--wait", env=stack.env, stdin=messages)
    assert "Oslo" in json.loads(run.stdout)["result"]["text"]


def test_rerun_from_an_edited_tool_result_goes_on_from_it(stack):
    sid = _sid()
    run = stack.run("submit", sid, "demo", "Weather in Lisbon?", "--wait", "--json")
    source = json.loads(run.stdout)
    assert source["state"] == "completed"
    edited = json.dumps({"city": "Lisbon", "celsius": 31, "sky": "hazy"})
    args = ("rerun", sid, source["turn_id"], "--from-step", "2", "--tool-result", edited)
    made = json.loads(stack.run("--json", *args, "--new-turn", "rr-cli").stdout)
    assert made["turn_id"] == "rr-cli" and made["rerun_of"]["edited"] == "tool_result"
    with Client(stack.url, stack.token) as tk:
        done = tk.turns.wait(sid, "rr-cli", timeout=60)
        assert done.rerun_of is not None and done.rerun_of.from_step == 2
    assert done.result == {"text": "In Lisbon it is 31 degrees and hazy today."}
    # a model answer for a tool step is refused, and says where
    refused = stack.run(*args[:5], "--model-answer", "x", code=1)
    assert refused.stderr.startswith("error: 422 validation_error:"), refused.stderr


def test_feedback_is_given_and_summed_up_per_version(stack):
    sid = _sid()
    turn = json.loads(stack.run("--json", "submit", sid, "demo", "Lisbon?", "--wait").stdout)
    tid = turn["turn_id"]
    out = stack.run("feedback", sid, tid, "--up", "--note", "spot on").stdout
    assert f"turn {tid}: up by cli" in out
    step = json.loads(
        stack.run("--json", "feedback", sid, tid, "--score", "2", "--step", "2").stdout
    )
    assert (step["step"], step["score"], step["scale"]) == (2, 2.0, [1.0, 5.0])
    assert step["note_hash"] is None
    both = stack.run("feedback", sid, tid, "--up", "--score", "3", code=2)
    assert "exactly one of --up, --down and --score" in both.stderr
    summary = json.loads(stack.run("--json", "scores", "demo").stdout)
    assert summary["agent"] == "demo" and summary["versions"][0]["count"] >= 2
    assert "mean" in stack.run("scores", "demo").stdout


def test_schedules_are_made_listed_paused_and_deleted(stack):
    sid = _sid()
    args = ("schedules", "new", "demo", "Lisbon?", "--every", "3600", "--id", f"h-{sid}")
    made = json.loads(stack.run("--json", *args).stdout)
    assert (made["schedule_id"], made["every_seconds"], made["paused"]) == (f"h-{sid}", 3600, False)
    again = stack.run(*args).stdout  # the same spec: the same schedule
    assert f"h-{sid}" in again and "every 3600s" in again
    listed = json.loads(stack.run("--json", "schedules", "list", "--all").stdout)
    assert f"h-{sid}" in [s["schedule_id"] for s in listed]
    assert json.loads(stack.run("--json", "schedules", "pause", f"h-{sid}").stdout)["paused"]
    assert "active" in stack.run("schedules", "resume", f"h-{sid}").stdout
    assert "deleted" in stack.run("schedules", "delete", f"h-{sid}").stdout
    gone = stack.run("schedules", "show", f"h-{sid}", code=1).stderr
    assert gone.startswith("error: 404 not_found:"), gone
    both = stack.run("schedules", "new", "demo", "x", "--every", "5", "--cron", "* * * * *", code=2)
    assert "exactly one of --cron, --every and --at" in both.stderr
    # once, at a time (UTC unless it says): a one-shot, listed as such
    once = ("schedules", "new", "demo", "later", "--at", "2030-01-02T03:04:05", "--id", f"o-{sid}")
    made = json.loads(stack.run("--json", *once).stdout)
    assert (made["cron"], made["every_seconds"]) == (None, None)
    assert made["at"] == made["next_at"] and made["at"].startswith("2030-01-02T03:04:05")
    assert "once at 2030-01-02 03:04:05" in stack.run("schedules", "show", f"o-{sid}").stdout


def test_tail_until_settled_shows_the_events_and_ends(stack):
    sid = _sid()
    turn = json.loads(stack.run("--json", "submit", sid, "demo", "Weather in Lisbon?").stdout)
    out = stack.run("tail", sid, "--until-settled").stdout
    for kind in ("turn.accepted", "turn.started", "model.completed", "tool.completed"):
        assert kind in out
    assert "→ get_weather" in out and "result: In Lisbon" in out
    assert out.rstrip().splitlines()[-1].split()[2] == "turn.completed"
    # JSON lines, one event each, only the turn's, in order
    lines = stack.run("tail", sid, "--turn", turn["turn_id"], "--json").stdout.splitlines()
    events = [json.loads(line) for line in lines]
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert {e["turn_id"] for e in events} == {turn["turn_id"]}
    assert events[-1]["type"] == "turn.completed"


def test_submit_follow_tails_the_turn_until_it_settles(stack):
    out = stack.run("submit", _sid(), "demo", "Weather in Lisbon?", "--follow").stdout
    assert "queued" in out.splitlines()[0]
    assert "turn.completed" in out.splitlines()[-1]


def test_show_prints_the_timeline_and_its_json(stack):
    sid = _sid()
    turn = json.loads(stack.run("--json", "submit", sid, "demo", "Lisbon?", "--wait").stdout)
    out = stack.run("show", sid, turn["turn_id"]).stdout
    assert f"turn {turn['turn_id']}  completed" in out
    rows = [line.split() for line in out.splitlines()]
    header = next(r for r in rows if r[:3] == ["step", "kind", "name"])
    assert header[3:] == ["attempt", "fence", "duration", "retries", "outcome", "usage"]
    steps = [r for r in rows if r and r[0] in ("1", "2", "3") and r[1] in ("model", "tool")]
    assert [(r[0], r[1], r[2]) for r in steps] == [
        ("1", "model", "demo/weather"),
        ("2", "tool", "get_weather"),
        ("3", "model", "demo/weather"),
    ]
    assert "attempts" in out and "started" in out
    timeline = json.loads(stack.run("show", sid, turn["turn_id"], "--json").stdout)
    assert [s["kind"] for s in timeline["steps"]] == ["model", "tool", "model"]
    assert timeline["turn"]["state"] == "completed" and len(timeline["attempts"]) == 1


def test_an_approval_is_approved_and_another_denied(stack):
    sid, turn = _parked(stack, "payer")
    tid = turn["turn_id"]
    # its replay (the same key) says what the turn waits for and how to answer it
    shown = stack.run("submit", sid, "payer", "go", "--idempotency-key", tid).stdout
    assert "waiting for approval approval-2-1" in shown
    assert f"turnkeep approve {sid} {tid} approval-2-1" in shown
    inbox = json.loads(stack.run("--json", "inbox", "--all").stdout)
    assert [(i["turn_id"], i["request"]["request_id"]) for i in inbox if i["turn_id"] == tid] == [
        (tid, "approval-2-1")
    ]
    assert "approval-2-1" in stack.run("inbox", "--all").stdout
    out = stack.run("approve", sid, tid, "--reason", "checked").stdout  # the open request
    assert f"turn {tid}" in out
    with stack.client() as tk:
        done = tk.turns.wait(sid, tid, 30)
    assert done.state == "completed" and "charged" in done.result["text"]  # type: ignore[index]

    sid, turn = _parked(stack, "payer")
    tid = turn["turn_id"]
    stack.run("--json", "deny", sid, tid, "approval-2-1", "--reason", "too much")
    with stack.client() as tk:
        done = tk.turns.wait(sid, tid, 30)
        waits = tk.turns.timeline(sid, tid).waits
    assert done.state == "completed" and done.result["text"].startswith("error")  # type: ignore[index]
    assert [(w.request_id, w.outcome) for w in waits] == [("approval-2-1", "denied")]
    # no request is open any more: approve without an id says so
    assert "no open input request" in stack.run("approve", sid, tid, code=1).stderr


def test_approve_all_answers_every_approval_of_one_wait(stack):
    sid, turn = _parked(stack, "payroll")
    tid = turn["turn_id"]
    assert [p["step"] for p in turn["pending_inputs"]] == [2, 3, 4]
    assert (
        "give a REQUEST_ID or --all"
        in stack.run("approve", sid, tid, "approval-2-1", "--all", code=2).stderr
    )
    out = json.loads(stack.run("--json", "approve", sid, tid, "--all", "--reason", "ok").stdout)
    assert out["pending_inputs"] == []
    with stack.client() as tk:
        done = tk.turns.wait(sid, tid, 30)
        waits = tk.turns.timeline(sid, tid).waits
    assert done.state == "completed" and done.result["text"].count("charged") == 3  # type: ignore[index]
    assert [w.outcome for w in waits] == ["approved"] * 3
    assert "no open approval request" in stack.run("deny", sid, tid, "--all", code=1).stderr


def test_a_question_is_answered_with_json_and_the_tail_says_how(stack):
    sid, turn = _parked(stack, "asker")
    tid, rid = turn["turn_id"], turn["pending_input"]["request_id"]
    # a tail of the waiting turn (here: until a timeout) shows the request and its answer
    tail = subprocess.Popen(
        [TURNKEEP, "tail", sid, "--turn", tid],
        env=_env(stack.env),
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        stack.run("answer", sid, tid, rid, "--json", '{"answer": "Ann"}')
        out, _ = tail.communicate(timeout=30)
    finally:
        tail.kill()
    assert tail.returncode == 0 and "\x1b" not in out
    assert f"question {rid}" in out
    assert f"""turnkeep answer {sid} {tid} {rid} --json '{{"answer": "…"}}'""" in out
    assert f"{rid} answered by cli" in out and 'result: ok: "Ann"' in out
    # a malformed answer is a usage error, before any request
    assert "not JSON" in stack.run("answer", sid, tid, rid, "--json", "{", code=2).stderr


def test_cancel_settles_a_waiting_turn(stack):
    sid, turn = _parked(stack, "asker")
    cancelled = json.loads(stack.run("--json", "cancel", sid, turn["turn_id"]).stdout)
    assert cancelled["state"] == "cancelled"
    # waiting for a cancelled turn is exit 4; cancelling it again is the API's 409
    stack.run("submit", sid, "asker", "go", "--idempotency-key", turn["turn_id"], "--wait", code=4)
    again = stack.run("cancel", sid, turn["turn_id"], code=1)
    assert again.stderr.startswith("error: 409 turn_not_active:")


def test_delete_erases_a_session_and_its_reads_are_gone(stack):
    sid = _sid()
    stack.run("submit", sid, "demo", "Lisbon?", "--expires-after", "3600", "--wait")
    shown = stack.client().sessions.get(sid)
    assert shown.expires_after == 3600 and shown.expires_at is not None
    gone = json.loads(stack.run("--json", "delete", sid, "--wait").stdout)
    assert (gone["session_id"], gone["reason"], gone["deleted_by"]) == (sid, "deleted", "cli")
    assert gone["erased_at"] is not None and gone["erased_rows"] > 0
    again = stack.run("delete", sid).stdout
    assert again.startswith(f"{sid}  deleted by cli at ") and "erased at" in again
    refused = stack.run("show", sid, "t-none", code=1)
    assert refused.stderr.startswith("error: 410 session_deleted:")
    assert sid not in stack.run("sessions", "--json", "--all").stdout

    async def run() -> None:  # the async client: the same tombstone, and 410 on a read
        async with AsyncClient(stack.url, stack.token) as tk:
            assert (await tk.sessions.delete(sid)).erased_at is not None
            with pytest.raises(ApiError) as read:
                await tk.sessions.get(sid)
            assert (read.value.status, read.value.code) == (410, "session_deleted")
            assert read.value.problem["erased_at"] is not None

    asyncio.run(run())


def test_sessions_and_turns_list_them(stack):
    sid = _sid()
    turn = json.loads(stack.run("--json", "submit", sid, "demo", "Lisbon?", "--wait").stdout)
    listed = json.loads(stack.run("sessions", "--json", "--all").stdout)
    assert sid in [s["session_id"] for s in listed]
    assert listed[0]["session_id"] == sid  # newest first
    table = stack.run("sessions", "--limit", "1").stdout.splitlines()
    assert table[0].split()[:3] == ["session", "agent", "state"]
    assert table[1].split()[:3] == [sid, "demo", "idle"] and len(table) == 2
    turns = stack.run("turns", sid).stdout
    assert turn["turn_id"] in turns and "completed" in turns


def test_search_finds_turns_and_sessions_by_their_metadata(stack):
    tag = uuid.uuid4().hex[:8]
    sids = [_sid() for _ in range(3)]
    for i, sid in enumerate(sids):
        meta = ["--meta", f"case={tag}", "--meta", f"n={i}"]
        team = ["--session-meta", f"team={'red' if i < 2 else 'blue'}"]
        run = stack.run("--json", "submit", sid, "demo", "Lisbon?", "--wait", *meta, *team)
        assert json.loads(run.stdout)["metadata"] == {"case": tag, "n": str(i)}
    found = json.loads(
        stack.run("--json", "search", "turns", "--meta", f"case={tag}", "--all").stdout
    )
    assert [t["session_id"] for t in found] == sids[::-1]  # newest first, every page
    one = stack.run("search", "turns", "--meta", f"case={tag}", "--meta", "n=1", "--since", "1h")
    lines = one.stdout.splitlines()
    assert lines[0].split()[:3] == ["session", "turn", "state"] and len(lines) == 2
    assert lines[1].split()[:3][0] == sids[1] and "completed" in lines[1]
    reds = json.loads(stack.run("--json", "search", "sessions", "--meta", "team=red").stdout)
    assert {s["session_id"] for s in reds} >= set(sids[:2]) and sids[2] not in {
        s["session_id"] for s in reds
    }
    # none before the turns were admitted; a bad filter is the API's 422, exit 1
    assert (
        json.loads(
            stack.run(
                "--json", "search", "turns", "--meta", f"case={tag}", "--until", "2020-01-01"
            ).stdout
        )
        == []
    )
    bad = stack.run("search", "turns", "--meta", "bad key=x", code=1)
    assert "422 validation_error" in bad.stderr
    stack.run("search", "turns", "--since", "last monday", code=2)


def test_agents_versions_and_an_upgrade_of_a_live_stack(stack):
    """``turnkeep agents`` and ``versions`` against the real API and worker: the declared
    versions, the tenant's turns on each definition and the live worker serving it; an
    upgrade is an admin's (this token is a member's), answered as the API's problem."""
    listed = json.loads(stack.run("--json", "agents").stdout)["agents"]
    demo = next(a for a in listed if a["name"] == "demo")
    assert [v["version"] for v in demo["versions"]] == ["1"]
    digest = demo["latest"]["definition_hash"]
    sid, turn = _parked(stack, "asker")

    def served() -> dict[str, object] | None:
        found = json.loads(stack.run("--json", "versions", "asker").stdout)["versions"]
        [v] = [v for v in found if v["declared"]]  # (others: what live workers serve)
        return v if v["workers"] else None

    deadline = time.monotonic() + 20
    while (use := served()) is None and time.monotonic() < deadline:
        time.sleep(0.5)
    assert use is not None and use["declared"] and use["latest"]
    assert use["turns"] == {"waiting": 1}
    table = stack.run("versions", "demo").stdout
    assert digest[:12] in table and "yes" in table
    r = stack.run("upgrade", sid, str(turn["turn_id"]), code=1)
    assert "forbidden_role" in r.stderr or "403" in r.stderr, r.stderr


def test_a_project_session_with_an_attachment_and_its_fork(stack, store, tmp_path):
    pid = f"p-{uuid.uuid4().hex[:8]}"
    overrides = {"agents": {"demo": {"instructions": "Be brief."}}}
    made = json.loads(
        stack.run("--json", "projects", "new", pid, "--overrides", json.dumps(overrides)).stdout
    )
    assert (made["project_id"], made["owner"], made["overrides"]) == (pid, "cli", overrides)
    # the same again is the same project; it is listed and shown, plainly
    assert (
        json.loads(
            stack.run("--json", "projects", "new", pid, "--overrides", json.dumps(overrides)).stdout
        )["created_at"]
        == made["created_at"]
    )
    assert pid in stack.run("projects", "list").stdout
    shown = stack.run("projects", "show", pid).stdout
    assert shown.splitlines()[1].split()[:3] == [pid, "cli", "demo"] and "Be brief." in shown
    sid = _sid()
    first = json.loads(
        stack.run("--json", "submit", sid, "demo", "Lisbon?", "--project", pid, "--wait").stdout
    )
    assert first["state"] == "completed"
    assert stack.client().sessions.get(sid).project == pid
    # a file is uploaded to the session and named by the turn; again, the same one
    notes = tmp_path / "notes.md"
    notes.write_text("# notes\nbring an umbrella\n")
    second = json.loads(
        stack.run(
            "--json", "submit", sid, "demo", "Oslo?", "--project", pid, "-a", str(notes), "--wait"
        ).stdout
    )
    assert second["state"] == "completed", second
    named = store.reads.get_turn(stack.tenant, sid, second["turn_id"]).input["attachments"]
    assert len(named) == 1 and named[0].startswith("att-")
    with stack.client() as tk:
        att = tk.attachments.get(sid, named[0])
        assert (att.filename, att.content_type, att.state) == ("notes.md", "text/markdown", "ready")
        assert tk.attachments.content(sid, named[0]) == notes.read_bytes()
    third = json.loads(
        stack.run(
            "--json", "submit", sid, "demo", "Rome?", "-a", str(notes), "--project", pid
        ).stdout
    )
    assert store.reads.get_turn(stack.tenant, sid, third["turn_id"]).input["attachments"] == named
    # a type off the allowlist is the API's typed refusal, and nothing is admitted
    blob = tmp_path / "blob.bin"
    blob.write_bytes(b"\0\1")
    refused = stack.run("submit", sid, "demo", "x", "-a", str(blob), "--project", pid, code=1)
    assert refused.stderr.startswith("error: 415 unsupported_attachment_type:")
    # fork at the first turn's end: the new session has its history, the source all three
    at = store.reads.turn_events(stack.tenant, sid, first["turn_id"])[-1].seq
    forked = json.loads(
        stack.run("--json", "fork", sid, str(at), "--new-session", f"{sid}-f").stdout
    )
    assert forked["session_id"] == f"{sid}-f" and forked["forked_from"] == {
        "session_id": sid,
        "seq": at,
    }
    assert stack.client().sessions.get(f"{sid}-f").head_seq == at
    assert "forked from" in stack.run("fork", sid, str(at), "--new-session", f"{sid}-f").stdout
    assert stack.run("fork", sid, "100000", code=1).stderr.startswith(
        "error: 409 fork_point_ahead:"
    )
    # its overrides replaced: later turns pin the new ones
    changed = json.loads(stack.run("--json", "projects", "set", pid, "--overrides", "{}").stdout)
    assert changed["overrides"] == {"agents": {}}
    assert (
        "must be a JSON object"
        in stack.run("projects", "set", pid, "--overrides", "[]", code=2).stderr
    )


def test_the_async_client_uploads_forks_and_makes_projects(stack):
    async def run() -> None:
        async with AsyncClient(stack.url, stack.token) as tk:
            pid = f"p-{uuid.uuid4().hex[:8]}"
            project = await tk.projects.create(pid)
            assert project.project_id == pid and (await tk.projects.get(pid)).owner == "cli"
            assert pid in [p.project_id for p in (await tk.projects.list(limit=500)).projects]
            sid = _sid()
            first = await tk.turns.admit(sid, "demo", "Lisbon?", project=pid)
            first = await tk.turns.wait(sid, first.turn_id, timeout=60)
            att = await tk.attachments.upload(
                sid, b"a,b\n1,2\n", filename="t.csv", content_type="text/csv"
            )
            again = await tk.attachments.upload(
                sid,
                b"a,b\n1,2\n",
                filename="t.csv",
                content_type="text/csv",
                idempotency_key=att.attachment_id,
            )
            assert again.attachment_id == att.attachment_id and att.state == "ready"
            turn = await tk.turns.admit(
                sid, "demo", "Oslo?", project=pid, attachments=[att.attachment_id]
            )
            assert (await tk.turns.wait(sid, turn.turn_id, timeout=60)).state == "completed"
            assert await tk.attachments.content(sid, att.attachment_id) == b"a,b\n1,2\n"
            forked = await tk.sessions.fork(sid, first.accepted_seq, new_session_id=f"{sid}-f")
            assert forked.forked_from.seq == first.accepted_seq
            await tk.attachments.delete(sid, att.attachment_id)
            with pytest.raises(ApiError) as gone:
                await tk.attachments.get(sid, att.attachment_id)
            assert gone.value.status == 404
            updated = await tk.projects.update(pid, {"agents": {"demo": {"instructions": "Hi."}}})
            assert updated.overrides["agents"]["demo"]["instructions"] == "Hi."

    asyncio.run(run())


def test_tokens_new_makes_a_table_the_api_accepts(stack):
    made = json.loads(
        cli(
            "tokens",
            "new",
            "--tenant",
            "acme",
            "--subject",
            "ops@acme.io",
            "--role",
            "reader",
            "--json",
        ).stdout
    )
    assert made["token"].startswith("tk_") and made["token"] not in made["TURNKEEP_TOKENS"]
    assert made["entry"] == {
        "sha256": token_digest(made["token"]),
        "tenant": "acme",
        "subject": "ops@acme.io",
        "role": "reader",
    }
    # the plain output carries the same, one TURNKEEP_TOKENS line to paste
    plain = cli("tokens", "new", "--tenant", "acme", "--subject", "dev").stdout
    line = next(x for x in plain.splitlines() if x.startswith("TURNKEEP_TOKENS="))
    assert json.loads(line.split("=", 1)[1].strip("'"))[0]["subject"] == "dev"
    env = {"TURNKEEP_TOKENS": made["TURNKEEP_TOKENS"]}
    listed = cli("tokens", "list", env=env).stdout
    assert "acme" in listed and "reader" in listed and token_digest(made["token"]) not in listed
    # a tenant the API would refuse is refused here
    assert (
        "tenant must match"
        in cli("tokens", "new", "--tenant", "a:b", "--subject", "x", code=2).stderr
    )
    api = stack.procs.api(env)
    as_reader = {"TURNKEEP_URL": api.url, "TURNKEEP_TOKEN": made["token"]}
    assert json.loads(cli("sessions", "--json", env=as_reader).stdout) == []
    wrong = cli("sessions", env={**as_reader, "TURNKEEP_TOKEN": "tk_wrong"}, code=1)
    assert wrong.stderr.startswith("error: 401 unauthorized:")


def test_a_stream_token_follows_the_session(stack):
    sid = _sid()
    stack.run("submit", sid, "demo", "Lisbon?", "--wait")
    issued = json.loads(stack.run("tokens", "stream", sid, "--json").stdout)
    assert issued["token"].startswith("tkst1.")
    page = httpx.get(
        f"{stack.url}/v1/sessions/{sid}/events",
        params={"stream_token": issued["token"], "after": 0},
        headers={"Accept": "application/json"},
        timeout=10,
    )
    assert page.status_code == 200 and page.json()["events"][0]["type"] == "turn.accepted"


def test_errors_exit_non_zero_with_the_problem_on_stderr(stack):
    run = stack.run("show", "no-such-session", "no-such-turn", code=1)
    assert run.stderr.startswith("error: 404 not_found:") and run.stdout == ""
    run = stack.run("tail", "no-such-session", code=1)
    assert run.stderr.startswith("error: 404 not_found:")
    gone = cli(
        "sessions", env={**stack.env, "TURNKEEP_URL": f"http://127.0.0.1:{free_port()}"}, code=3
    )
    assert gone.stderr.startswith("error: unreachable:")
    assert "Missing argument" in stack.run("submit", code=2).stderr
