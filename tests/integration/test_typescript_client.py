"""The TypeScript client (clients/typescript) against the live API, and its types
against the API's OpenAPI document.

``npm ci`` installs the package's tools once (kept in clients/typescript/node_modules,
git-ignored; again only when package-lock.json is newer). Then:

- the types: the current document (``python -m turnkeep.api.openapi_dump``) run through the
  package's generator (scripts/types.mjs) must give the committed src/schema.ts byte
  for byte, so a wire model changed in Python without ``make ts-types`` fails here;
- the package builds (``tsc``, strict: a type error fails the build) and its own tests
  run with ``node --test`` against a real API (uvicorn in this process) and a real
  celery worker, on this module's database, Redis prefix and queue. The Node tests
  assert the values (clients/typescript/test/*.test.ts*); this test asserts that each
  of them ran and passed, none skipped.
"""

from __future__ import annotations

import difflib
import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.api_server import Api, serve_api
from tests.journals import long_journal
from tests.procs import ROOT
from turnkeep.api.openapi_dump import document
from turnkeep.store.facade import Store

CLIENT = ROOT / "clients" / "typescript"
NODE = shutil.which("node")
NPM = shutil.which("npm")

#: every test of the package's suite, by its name: each must run and pass, and a test
#: added there is named here too
NODE_TESTS = {
    # test/admission.test.ts
    "a turn admitted twice with one Idempotency-Key is one turn",
    "a problem answer becomes a typed error with its code and status",
    # test/stream.test.ts
    "the stream yields contiguous seqs from the cursor, ending in turn.completed",
    "a connection cut mid-stream is resumed from Last-Event-ID: every event once, none lost",
    "a stream token follows the session without the bearer token",
    "a cursor before the retention cut: 410 resync_required, then a resync from the earliest",
    # test/inputs.test.ts
    "an approval answered: the turn runs the call it asked for and completes",
    "approvals asked together are answered at once, all of them in one request",
    "a cancelled turn: settled at once while it waits, its stream ends with turn.cancelled",
    # test/react.test.tsx
    "useTurn follows a turn; reloaded, it resumes without admitting again or delivering twice",
    "useSession follows a session; a submission cut by a reload is sent again as a replay",
    # test/reconnect.test.ts (a scripted local server: what the API rarely does on demand)
    "503, 429, silence and stream.resume each reconnect from the last seq; the events come once",
    "a stream token refused once it was used is renewed; a fresh one refused is an error",
    "a server that never answers well ends the stream with Unreachable after the retries",
    # test/sse.test.ts (no server)
    "lines: LF, CRLF and CR end a line, wherever the chunks split them",
    "the parser joins data lines, keeps id and event, and reports comments",
    "the cursor yields each seq once, skips deltas unless asked, and ends on the final frames",
    "a drop pauses twice as long each time, up to the bound, and gives up past the retries",
}


def _run(argv: list[str], *, timeout: float, env: dict[str, str] | None = None) -> str:
    """``argv`` in the package's folder; its output, or a failure that shows it."""
    done = subprocess.run(
        argv,
        cwd=CLIENT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if done.returncode != 0:
        pytest.fail(f"{' '.join(argv)} exited {done.returncode}\n{done.stdout}\n{done.stderr}")
    return done.stdout


@pytest.fixture(scope="module")
def node_modules() -> Path:
    """The package's dependencies, from its lock file (``npm ci``) when they are not
    installed yet or the lock changed since."""
    assert NODE and NPM, "Node 20 and npm are needed (the TypeScript client's tests)"
    installed = CLIENT / "node_modules" / ".package-lock.json"
    lock = CLIENT / "package-lock.json"
    if not installed.exists() or installed.stat().st_mtime < lock.stat().st_mtime:
        _run([NPM, "ci", "--no-audit", "--no-fund"], timeout=600)
    return installed.parent


#: the first test of the module may run ``npm ci`` on a fresh machine: more than the
#: suite's 300 s per test, should the registry be slow
INSTALL_TIMEOUT = pytest.mark.timeout(900)


@INSTALL_TIMEOUT
def test_the_committed_types_are_those_of_the_api_document(
    node_modules: Path, tmp_path: Path
) -> None:
    assert NODE
    doc = tmp_path / "openapi.json"
    doc.write_text(json.dumps(document()), encoding="utf-8")
    generated = _run([NODE, "scripts/types.mjs", str(doc)], timeout=120)
    committed = (CLIENT / "src" / "schema.ts").read_text(encoding="utf-8")
    assert "TurnRequest: {" in generated and "StreamResyncRequired: {" in generated
    if generated != committed:
        diff = difflib.unified_diff(
            committed.splitlines(), generated.splitlines(), "committed", "generated", lineterm=""
        )
        shown = "\n".join(list(diff)[:80])
        pytest.fail(f"clients/typescript/src/schema.ts is stale: run `make ts-types`\n{shown}")


@pytest.fixture(scope="module")
def api(service_env: dict[str, str]) -> Iterator[Api]:
    # the worker's agents (approvals), its broker, and a stream token secret
    with serve_api(
        service_env,
        agents="tests.agents",
        broker_url=service_env["TURNKEEP_REDIS_URL"],
        stream_token_secret="typescript-client-test",
    ) as handle:
        yield handle


def _tap(output: str) -> tuple[set[str], set[str], dict[str, int]]:
    """The names of the tests that passed and failed, and the closing counts."""
    passed = set(re.findall(r"^\s*ok \d+ - (.+?)(?: # .*)?$", output, re.M))
    failed = set(re.findall(r"^\s*not ok \d+ - (.+?)(?: # .*)?$", output, re.M))
    counts = {k: int(v) for k, v in re.findall(r"^# (\w+) (\d+)$", output, re.M)}
    return passed, failed, counts


@INSTALL_TIMEOUT
def test_the_typescript_client_against_the_live_api(
    api: Api, procs: object, store: Store, database_url: str, node_modules: Path
) -> None:
    assert NODE and NPM
    procs.worker()  # type: ignore[attr-defined]
    # a session whose journal the retention cut passed: 400 events, the newest 100 kept
    pruned = "ts-pruned"
    head = long_journal(database_url, api.tenant_a, pruned, 100)
    earliest = store.retention.prune(
        api.tenant_a, pruned, retain=100, batch=5000, window_rows=10
    ).earliest_seq
    assert earliest == head - 100 + 1
    # the package as shipped (dist/, declarations), then its tests compiled with it
    _run([NPM, "run", "--silent", "build"], timeout=300)
    assert (CLIENT / "dist" / "index.d.ts").exists() and (CLIENT / "dist" / "react.js").exists()
    _run([NPM, "run", "--silent", "pretest"], timeout=300)
    env = {
        **os.environ,
        "TURNKEEP_URL": api.url,
        "TURNKEEP_TOKEN": api.token_a,
        "TURNKEEP_TOKEN_B": api.token_b,
        "TK_PRUNED_SID": pruned,
        "TK_PRUNED_EARLIEST": str(earliest),
        "TK_PRUNED_HEAD": str(head),
    }
    files = sorted(
        str(p.relative_to(CLIENT)) for p in (CLIENT / "build" / "test").glob("*.test.js")
    )
    assert len(files) == 6, files
    done = subprocess.run(
        [NODE, "--test", "--test-reporter=tap", "--test-concurrency=1", *files],
        cwd=CLIENT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    passed, failed, counts = _tap(done.stdout)
    report = f"{done.stdout[-20000:]}\n{done.stderr[-5000:]}"
    assert done.returncode == 0 and not failed, report
    missing, unlisted = sorted(NODE_TESTS - passed), sorted(passed - NODE_TESTS)
    assert not missing and not unlisted, f"missing: {missing}; unlisted: {unlisted}\n{report}"
    assert counts.get("fail") == 0 and counts.get("pass") == len(passed), counts
    assert counts.get("skipped") == 0 and counts.get("todo") == 0 and counts.get("cancelled") == 0
