"""Python sources parsed apart from the test process (the house rules' tests read
every module's tree)."""

from __future__ import annotations

import ast
import pickle
import subprocess
import sys
from collections.abc import Mapping


def parse_apart(paths: Mapping[str, str]) -> dict[str, ast.Module]:
    """Every file's tree, parsed in a fresh interpreter. CPython 3.11 before 3.11.8
    leaks the AST constructor's recursion depth when a construction fails (gh-106905),
    and a process that ran other tests first (make test's xdist workers) then answers
    any ast.parse with "SystemError: AST constructor recursion depth mismatch"."""
    script = (
        "import ast, pickle, sys\n"
        "paths = pickle.load(sys.stdin.buffer)\n"
        "trees = {n: ast.parse(open(p).read(), p) for n, p in paths.items()}\n"
        "pickle.dump(trees, sys.stdout.buffer)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], input=pickle.dumps(dict(paths)), capture_output=True
    )
    assert done.returncode == 0, done.stderr.decode()
    trees: dict[str, ast.Module] = pickle.loads(done.stdout)
    return trees
