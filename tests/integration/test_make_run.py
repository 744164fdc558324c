"""`make run` end to end: ``turnkeep dev --once`` starts the API, two workers and beat
as real processes, submits a demo turn with the client and follows it to completion.
It runs from any directory (the package, not this repository's deploy/), with its
logs in that directory's ``.run/``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.procs import ROOT, free_port

TURNKEEP = str(Path(sys.executable).with_name("turnkeep"))


def test_turnkeep_dev_completes_a_demo_turn(service_env, tmp_path):
    env = {**os.environ, **service_env, "TURNKEEP_AGENTS": "turnkeep.runtime.demo"}
    out = subprocess.run(
        [TURNKEEP, "dev", "--once", "--port", str(free_port())],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "Token   tk_dev_" in out.stdout
    assert "turn.completed" in out.stdout and "demo turn completed" in out.stdout
    assert "curl -N" in out.stdout and "turnkeep tail demo-" in out.stdout
    assert "\x1b" not in out.stdout
    assert {"api.log", "worker1.log", "worker2.log", "beat.log"} <= {
        p.name for p in (tmp_path / ".run").iterdir()
    }


def test_the_make_run_script_of_old_is_turnkeep_dev():
    out = subprocess.run(
        [sys.executable, "deploy/devrun.py", "--help"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert out.returncode == 0, out.stderr
    assert "turnkeep dev" in out.stdout and "--once" in out.stdout
    assert "--migrate-only" in out.stdout
