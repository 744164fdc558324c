"""`make run`'s launcher end to end: API, two workers and beat as real processes, a
demo turn over HTTP followed over SSE to completion."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.procs import ROOT, free_port


def test_make_run_launcher_completes_a_demo_turn(service_env):
    env = {**os.environ, **service_env, "TURNKEEP_AGENTS": "runtime.demo"}
    out = subprocess.run(
        [sys.executable, "deploy/devrun.py", "--once", "--port", str(free_port())],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "Token   tk_dev_" in out.stdout
    assert "turn.completed" in out.stdout and "demo turn completed" in out.stdout
    assert "curl -N" in out.stdout
