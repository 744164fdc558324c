"""The house's import rules, read from the source with ``ast`` (nothing is imported):

- no import circle between our modules (module-level imports, ``TYPE_CHECKING`` ones
  included, and the packages a dotted import runs on the way);
- one import root: our folders are imported as ``turnkeep.<folder>``, never by their own
  names;
- imports point one way (the README's Layout): ``api``, ``worker``, ``recovery`` ->
  ``store``, ``runtime``; ``store`` -> ``runtime``; ``runtime`` -> nothing of ours;
  ``turnkeep`` -> ``runtime`` and itself; and the Celery app (``worker``) -> the jobs of
  ``recovery`` it schedules, never the other way. Function-level imports count too, and
  ``runtime`` imports no web, queue or database library (``THIRD_PARTY``); a module in
  ``LEAVES`` may be imported from anywhere and imports nothing of ours but other leaves;
  an agents module in ``FACE_USERS`` imports the public face (the package ``turnkeep``)
  as a user's agents module does;
- no import of our own modules inside a function (the way a circle hides), but the few
  lazy imports listed in ``LAZY`` with their reason;
- no module over 500 lines (migrations aside), the console's scripts, the SQL files and
  the TypeScript client's sources (its generated types aside) included;
- a file name in two folders means one thing (``SHARED_NAMES`` says which);
- no old module path kept as a shim that warns ``DeprecationWarning`` that it moved
  (``House.shims``): a module that moves takes its importers with it.

What is still wrong while the reshape is under way is listed in ``KNOWN``, one entry per
violation with who fixes it; an entry that no longer fails fails the test, so the list
only shrinks.
"""

from __future__ import annotations

import ast
import textwrap
from collections import defaultdict
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from tests.parsing import parse_apart

ROOT = Path(__file__).resolve().parents[2]
#: the folders of our code: each is the package turnkeep.<folder> (turnkeep/<folder> is a
#: link to it, pyproject.toml says why), but turnkeep itself
PACKAGES = ("api", "worker", "store", "recovery", "runtime", "turnkeep")
ROOT_PACKAGE = "turnkeep"
PLANES = "turnkeep.runtime.planes."
#: which of our packages each may import (its own always)
MAY_IMPORT = {
    "api": {"store", "runtime"},
    # the Celery app runs recovery's beat-scheduled jobs (scan, retention, sweeps) as
    # its tasks; recovery itself imports nothing of the worker
    "worker": {"store", "runtime", "recovery"},
    "recovery": {"store", "runtime"},
    "store": {"runtime"},
    "runtime": set(),
    "turnkeep": {"runtime"},
}
#: modules any package may import, each a leaf (it imports nothing of ours)
LEAVES = {
    # the API's JSON bodies, defined once where a client-only install (pydantic only)
    # has them; the OpenAPI document states them closed (api/http/bodies.py closed)
    "turnkeep.models": "the wire models the client parses and the API answers with",
    # the wire models of schedules, feedback, the inbox, a tombstone and max_running:
    # beside models.py, whose base and shared shapes they build on (a leaf may import
    # another leaf)
    "turnkeep.schedules": "the wire models of schedules",
    "turnkeep.feedback": "the wire models of feedback",
    "turnkeep.inbox": "the wire models of the inbox",
    "turnkeep.erasure": "the wire model of a deleted session's tombstone",
    "turnkeep.max_running": "the wire model of a tenant's max_running",
    "turnkeep.problems": "the wire model of an error: the problem the API answers",
    # a dataset's cases and their typed assertions, and the evaluation plane's answers:
    # what a client writes and reads, the API validates and the runtime evaluates
    "turnkeep.assertions": "the cases and assertions of the evaluation plane",
    "turnkeep.evaluation": "the wire models of datasets, experiments and promotions",
}
#: agents modules among our packages, written as a user's is: against the public face
#: (``from turnkeep import …``, its names imported on first use; issue 38), so each may
#: import the package ``turnkeep`` itself, whatever its layer
FACE_USERS: dict[str, str] = {
    "turnkeep.runtime.demo": "the default agents module (TURNKEEP_AGENTS), the first a user reads",
}
#: top-level libraries a package must not import
THIRD_PARTY = {
    "runtime": {"celery", "kombu", "fastapi", "starlette", "sqlalchemy", "psycopg", "redis"},
}
MAX_LINES = 500
#: product files besides the Python modules that the size rule covers
OTHER_SOURCES = ("*.js", "*.sql")
#: the other-language clients' folders and sources the size rule covers too, and the
#: generated files it leaves out (clients/typescript/src/schema.ts: the OpenAPI types)
CLIENT_SOURCES = {"clients/typescript": ("src/*.ts", "src/*.tsx", "test/*.ts", "test/*.tsx")}
GENERATED = {"clients/typescript/src/schema.ts"}

#: (importer, imported): why the import waits for the function that needs it
LAZY: dict[tuple[str, str], str] = {
    ("turnkeep.cli.processes", "turnkeep.dev"): (
        "turnkeep dev needs the server extra: turnkeep/dev.py imports psycopg, which a "
        "client-only install lacks, so it is imported once needs_server has said so"
    ),
    ("turnkeep.cli.processes", "turnkeep.runtime.settings"): (
        "turnkeep flower's settings need pydantic-settings, of the server extra: read only "
        "once the flower command runs"
    ),
    ("turnkeep.cli.processes", "turnkeep.runtime.local_settings"): (
        "as turnkeep.runtime.settings: the flower section needs pydantic-settings, of the "
        "server extra"
    ),
    ("turnkeep.cli.token_commands", "turnkeep.runtime.settings"): (
        "TURNKEEP_TOKENS is the server's setting (pydantic-settings, of the server extra): "
        "read once needs_server has said so"
    ),
}

#: a file name found in several folders, and the one thing it names in each (the
#: concern, seen from each layer)
SHARED_NAMES: dict[str, str] = {
    "admission.py": "admitting a turn: its input and identity hash (runtime), the one "
    "admission every turn takes (store), the verb every surface calls (api/service)",
    "answers.py": "answering a turn's open request: the verb (api/service), the commands "
    "answer, approve and deny (turnkeep/cli)",
    "agents.py": "the agents the API declares and their versions: the routes (api/http), "
    "the client's calls (turnkeep/client)",
    "app.py": "a process's application object: FastAPI (api), Celery (worker), typer "
    "(turnkeep/cli)",
    "attachments.py": "a session's attached files: routes, verbs, sweep, statements, the "
    "client's calls (turnkeep/client)",
    "bindings.py": "a chat bridge's participant bindings: the routes, the verbs, the "
    "client's calls (turnkeep/client)",
    "bridges.py": "chat bridges: the inbound routes, the verbs, the bindings' statements",
    "delegation.py": "delegating tasks to child turns: the rules (runtime), admitting "
    "children (worker), the join both the worker and recovery run (store)",
    "erasure.py": "erasing a session: the verb (api/service), its statements (store), the "
    "task that runs its batches (worker), the sweep (recovery), the tombstone's wire "
    "shape (turnkeep)",
    "errors.py": "the package's branch of the one error tree (runtime/errors.py)",
    "datasets.py": "the evaluation plane's datasets: the routes, the verbs, the statements",
    "evaluation.py": "the evaluation plane: its wire shapes (turnkeep), the client's calls "
    "(turnkeep/client)",
    "experiments.py": "the evaluation plane's experiments: the routes, the verbs, the "
    "statements, and the driver beat runs (recovery)",
    "promotions.py": "promoting an agent's version: the routes, the verb, the journal's statements",
    "feedback.py": "a person's score of a turn: the verb (api/service), its rows (store), "
    "its wire shapes (turnkeep), the client's calls (turnkeep/client)",
    "max_running.py": "how many turns of a tenant or agent run at once: the statements "
    "(store), the worker's reading of the declared limits (worker), the verbs (api/service), "
    "their routes (api/http), the client's calls (turnkeep/client) and the wire shape "
    "(turnkeep)",
    "forks.py": "forking a session: routes, verb, statements",
    "inbox.py": "the open requests a caller may answer: the verb (api/service), the wire "
    "shapes (turnkeep), the client's call (turnkeep/client)",
    "health.py": "readiness: the route (api/http), the checks of Postgres and Redis (api/service)",
    "settings.py": "what a process reads from the environment: the server's sections "
    "(runtime), the client's few (turnkeep/client: a client-only install has no server)",
    "schedules.py": "schedules: when ticks fall (runtime), the verbs (api/service) and "
    "routes (api/http), the rows (store), the beat's pass that fires them (recovery), "
    "their wire shapes (turnkeep), the client's calls (turnkeep/client)",
    "reruns.py": "re-running a turn from a step: what it reuses (runtime), the verb "
    "(api/service), its admission's statements (store)",
    "ids.py": "the ids a surface derives from what its client names (an Idempotency-Key, "
    "an A2A message id)",
    "memory.py": "durable memory: scope and recall (runtime), the writer (worker), the "
    "statements (store)",
    "messages.py": "a conversation's messages: the model's (runtime), A2A's incoming ones "
    "(api/a2a)",
    "metrics.py": "the process's Prometheus metrics (api, worker)",
    "problems.py": "an error as an RFC 9457 problem: its wire shape (turnkeep), the "
    "answer the HTTP edge gives each error of the tree (api)",
    "projects.py": "projects and their overrides: rules, routes, verbs, statements, the "
    "client's calls (turnkeep/client)",
    "resources.py": "what one process holds, built once: the API's (api), a worker's (worker)",
    "reads.py": "reading turns, sessions and journals: the verb, the statements, the "
    "statements in memory",
    "registry.py": "what a package declares, by name: agents (runtime/agents), providers "
    "(runtime/providers)",
    "retention.py": "how long the journal is kept: the prune job, its statements",
    "search.py": "searching turns and sessions by filters: the route (api/http), the "
    "verbs and the query language (api/service), the statements (store), the client's "
    "calls (turnkeep/client)",
    "sse.py": "server-sent events, written (api) and read (turnkeep/client)",
    "tool_steps.py": "a tool call's durable steps: the worker's log, the statements",
    "tools.py": "an agent's tools: declared (runtime/agents), run (worker)",
    "sessions.py": "a tenant's sessions: the routes (api/http), the client's calls "
    "(turnkeep/client)",
    "turns.py": "turns: the routes, the transitions' statements, those in memory, the "
    "client's calls (turnkeep/client)",
    "webhooks.py": "a settled turn's webhook: signing and verifying (runtime), delivery (worker)",
    "workflows.py": "workflow nodes: the routes (api/http), admitting and reading a node "
    "with its webhook (api/service)",
}

#: violations left to fix, each ("rule", "what"): who fixes it. Empty: the rules hold.
KNOWN: dict[tuple[str, str], str] = {}


@dataclass(frozen=True)
class Import:
    importer: str
    imported: str
    line: int
    #: inside a function (run when it is called)
    lazy: bool


def _walk(node: ast.AST, lazy: bool) -> Iterator[tuple[ast.Import | ast.ImportFrom, bool]]:
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.Import | ast.ImportFrom):
            yield child, lazy
        inner = lazy or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
        yield from _walk(child, inner)


def _ancestors(name: str) -> list[str]:
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def _cycle_in(group: list[str], edges: Mapping[str, set[str]]) -> list[str]:
    """One circle through the group's first module, as the path that closes it."""
    start, members = group[0], set(group)
    paths = {start: [start]}
    queue = [start]
    while queue:
        node = queue.pop(0)
        for nxt in sorted(edges.get(node, ())):
            if nxt == start:
                return [*paths[node], start]
            if nxt in members and nxt not in paths:
                paths[nxt] = [*paths[node], nxt]
                queue.append(nxt)
    raise AssertionError(group)


class House:
    """Our packages under ``root``, read with ``ast``."""

    def __init__(self, root: Path) -> None:
        self.root = root

    @cached_property
    def modules(self) -> dict[str, Path]:
        """Every module of our packages by dotted name (a package is its ``__init__``)."""
        found: dict[str, Path] = {}
        for package in PACKAGES:
            for path in sorted((self.root / package).rglob("*.py")):
                parts = path.relative_to(self.root).with_suffix("").parts
                if parts[-1] == "__init__":
                    parts = parts[:-1]
                if package != ROOT_PACKAGE:
                    parts = (ROOT_PACKAGE, *parts)
                found[".".join(parts)] = path
        return found

    @cached_property
    def trees(self) -> dict[str, ast.Module]:
        return parse_apart({n: str(p) for n, p in self.modules.items()})

    def _resolve(self, name: str) -> str | None:
        """The module ``name`` is, or the nearest package it is an attribute of."""
        while name and name not in self.modules:
            name = name.rpartition(".")[0]
        return name or None

    def _targets(self, importer: str, node: ast.Import | ast.ImportFrom) -> Iterator[str]:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if _ours(alias.name):
                    found = self._resolve(alias.name)
                    if found:
                        yield found
            return
        base = node.module or ""
        if node.level:
            package = importer
            if self.modules[importer].name != "__init__.py":
                package = importer.rpartition(".")[0]
            for _ in range(node.level - 1):
                package = package.rpartition(".")[0]
            base = f"{package}.{base}" if base else package
        if not _ours(base):
            return
        for alias in node.names:
            # ``from runtime import budget`` imports the module runtime.budget
            found = self._resolve(f"{base}.{alias.name}")
            if found:
                yield found

    @cached_property
    def imports(self) -> tuple[Import, ...]:
        found = []
        for name, tree in self.trees.items():
            for node, lazy in _walk(tree, False):
                for target in self._targets(name, node):
                    if target != name:
                        found.append(Import(name, target, node.lineno, lazy))
        return tuple(found)

    @cached_property
    def libraries(self) -> frozenset[tuple[str, str]]:
        """(module, top-level library) for every import of a library that is not ours."""
        found = set()
        for name, tree in self.trees.items():
            for node, _ in _walk(tree, False):
                if isinstance(node, ast.Import):
                    tops = [a.name.partition(".")[0] for a in node.names]
                elif node.level == 0 and node.module:
                    tops = [node.module.partition(".")[0]]
                else:
                    continue
                found.update((name, top) for top in tops if top != ROOT_PACKAGE)
        return frozenset(found)

    @cached_property
    def shims(self) -> frozenset[str]:
        """Old paths kept as shims: modules that warn ``DeprecationWarning`` that they
        moved."""
        return frozenset(
            name
            for name, path in self.modules.items()
            if "DeprecationWarning" in (text := path.read_text()) and " moved to " in text
        )

    def graph(self) -> dict[str, set[str]]:
        """Module-level imports, and the packages a dotted import runs first (a
        module's own packages are already running when it is)."""
        edges: dict[str, set[str]] = defaultdict(set)
        for imp in self.imports:
            if imp.lazy:
                continue
            mine = set(_ancestors(imp.importer))
            for target in [*_ancestors(imp.imported), imp.imported]:
                if target in self.modules and target not in mine and target != imp.importer:
                    edges[imp.importer].add(target)
        return edges

    def circles(self) -> list[list[str]]:
        """Each strongly connected set of modules, as one circle through it (Tarjan)."""
        edges = self.graph()
        index: dict[str, int] = {}
        low: dict[str, int] = {}
        stack: list[str] = []
        on_stack: set[str] = set()
        found: list[list[str]] = []

        def visit(node: str) -> None:
            index[node] = low[node] = len(index)
            stack.append(node)
            on_stack.add(node)
            for nxt in sorted(edges.get(node, ())):
                if nxt not in index:
                    visit(nxt)
                    low[node] = min(low[node], low[nxt])
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            if low[node] == index[node]:
                group = set()
                while True:
                    top = stack.pop()
                    on_stack.discard(top)
                    group.add(top)
                    if top == node:
                        break
                if len(group) > 1:
                    found.append(_cycle_in(sorted(group), edges))

        for node in sorted(self.modules):
            if node not in index:
                visit(node)
        return found

    def violations(self) -> set[tuple[str, str]]:
        found = {("circle", " -> ".join(circle)) for circle in self.circles()}
        found.update(("shim", name) for name in self.shims)
        for imp in self.imports:
            src, dst = layer(imp.importer), layer(imp.imported)
            face = imp.imported == ROOT_PACKAGE and imp.importer in FACE_USERS
            allowed = dst in MAY_IMPORT[src] or imp.imported in LEAVES or face
            if src != dst and not allowed:
                found.add(("upward", f"{imp.importer} -> {imp.imported}"))
            if imp.lazy and (imp.importer, imp.imported) not in LAZY:
                found.add(("lazy", f"{imp.importer} -> {imp.imported}"))
            if imp.importer in LEAVES and imp.imported not in LEAVES:
                found.add(("leaf", f"{imp.importer} -> {imp.imported}"))
        for importer, library in self.libraries:
            if library in PACKAGES:
                # a folder imported by its own name, not as turnkeep.<folder>: in a
                # checkout it loads the module a second time, installed it is missing
                found.add(("root", f"{importer} -> {library}"))
            if library in THIRD_PARTY.get(layer(importer), ()):
                found.add(("library", f"{importer} -> {library}"))
        for name, path in self.modules.items():
            if len(path.read_text().splitlines()) > MAX_LINES and not is_migration(name):
                found.add(("size", name))
        for package in PACKAGES:
            for pattern in OTHER_SOURCES:
                for path in (self.root / package).rglob(pattern):
                    if len(path.read_text().splitlines()) > MAX_LINES:
                        found.add(("size", path.relative_to(self.root).as_posix()))
        for folder, patterns in CLIENT_SOURCES.items():
            for pattern in patterns:
                for path in (self.root / folder).glob(pattern):
                    name = path.relative_to(self.root).as_posix()
                    if name not in GENERATED and len(path.read_text().splitlines()) > MAX_LINES:
                        found.add(("size", name))
        for file, where in self.folders().items():
            if len(where) > 1 and file not in SHARED_NAMES:
                found.add(("name", f"{file} in {', '.join(sorted(where))}"))
        return found

    def folders(self) -> dict[str, set[str]]:
        """Each file name (but ``__init__.py`` and the migrations) and the folders
        that hold one."""
        folders: dict[str, set[str]] = defaultdict(set)
        for name, path in self.modules.items():
            # a plane's registration is named for its plane (runtime/planes/): it
            # declares what the same name means in the other folders
            if name.startswith(PLANES):
                continue
            if path.name != "__init__.py" and not is_migration(name):
                folders[path.name].add(path.parent.relative_to(self.root).as_posix())
        return folders


def is_migration(name: str) -> bool:
    return name.startswith("turnkeep.store.migrations")


def _ours(name: str) -> bool:
    return name.partition(".")[0] == ROOT_PACKAGE


def layer(module: str) -> str:
    """The package of the one-way rule a module belongs to: ``turnkeep.store.x`` ->
    ``store``, ``turnkeep.cli`` -> ``turnkeep``."""
    first = module.removeprefix(f"{ROOT_PACKAGE}.").partition(".")[0]
    return first if first in PACKAGES and first != ROOT_PACKAGE else ROOT_PACKAGE


HOUSE = House(ROOT)


def test_the_rules_hold_but_for_the_known_violations() -> None:
    found = HOUSE.violations()
    new = sorted(found - KNOWN.keys())
    fixed = sorted(KNOWN.keys() - found)
    assert not new, "new violations:\n" + "\n".join(f"  {rule}: {what}" for rule, what in new)
    assert not fixed, "fixed, take them out of KNOWN:\n" + "\n".join(
        f"  {rule}: {what}" for rule, what in fixed
    )


def test_every_lazy_import_listed_is_one() -> None:
    lazy = {(i.importer, i.imported) for i in HOUSE.imports if i.lazy}
    assert LAZY.keys() <= lazy, sorted(LAZY.keys() - lazy)


def test_every_face_user_imports_the_face() -> None:
    face = {i.importer for i in HOUSE.imports if i.imported == ROOT_PACKAGE}
    assert FACE_USERS.keys() <= face, sorted(FACE_USERS.keys() - face)


def test_every_shared_name_is_still_shared() -> None:
    folders = HOUSE.folders()
    assert {n for n in SHARED_NAMES if len(folders.get(n, ())) < 2} == set()


def test_the_reader_finds_what_it_checks() -> None:
    """The rules pass on an empty graph too: the reader finds the imports we know of."""
    seen = {(i.importer, i.imported, i.lazy) for i in HOUSE.imports}
    assert ("turnkeep.worker.app", "turnkeep.recovery.scan", False) in seen
    assert ("turnkeep.runtime.projects", "turnkeep.runtime.agents.definition", False) in seen
    assert ("turnkeep.cli.processes", "turnkeep.dev", True) in seen
    assert ("turnkeep.runtime.obs.tracing", "opentelemetry") in HOUSE.libraries


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))


def test_each_rule_finds_what_breaks_it(tmp_path: Path) -> None:
    """A small house that breaks every rule once."""
    _write(
        tmp_path,
        {
            "runtime/__init__.py": "",
            "runtime/a.py": "from turnkeep.runtime import b\n",
            "runtime/b.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
            "    from turnkeep.runtime.c import C\n",
            "runtime/c.py": "from turnkeep.runtime.a import *\nimport redis\n",
            "runtime/sub/__init__.py": "from turnkeep.runtime.sub import d\n",
            "runtime/sub/d.py": "from . import e\n",
            "runtime/sub/e.py": "def f():\n    from turnkeep.runtime import a\n",
            "runtime/pool.py": "x = 1\n" * (MAX_LINES + 1),
            # the demo agents module may import the public face, another module may not
            "runtime/demo.py": "from turnkeep import Agent\n",
            "runtime/face.py": "from turnkeep import Agent\n",
            "runtime/old.py": "import warnings\nfrom turnkeep.worker import w\n"
            "warnings.warn('turnkeep.runtime.old moved to turnkeep.worker.w', "
            "DeprecationWarning)\n",
            "worker/__init__.py": "",
            "worker/w.py": "from turnkeep.api import h\n",
            "worker/pool.py": "",
            "api/__init__.py": "",
            "api/h.py": "import turnkeep.runtime.sub.d\n",
            "api/old_root.py": "from store import x\n",
            "store/__init__.py": "",
            "store/sql/x.sql": "--\n" * (MAX_LINES + 1),
            "clients/typescript/src/big.ts": "//\n" * (MAX_LINES + 1),
            "clients/typescript/src/schema.ts": "//\n" * (MAX_LINES + 1),  # generated
            "recovery/__init__.py": "",
            "turnkeep/__init__.py": "",
        },
    )
    found = House(tmp_path).violations()
    assert found == {
        (
            "circle",
            "turnkeep.runtime.a -> turnkeep.runtime.b -> turnkeep.runtime.c -> turnkeep.runtime.a",
        ),
        ("upward", "turnkeep.worker.w -> turnkeep.api.h"),
        ("upward", "turnkeep.runtime.face -> turnkeep"),
        ("root", "turnkeep.api.old_root -> store"),
        ("lazy", "turnkeep.runtime.sub.e -> turnkeep.runtime.a"),
        ("library", "turnkeep.runtime.c -> redis"),
        ("size", "turnkeep.runtime.pool"),
        ("size", "store/sql/x.sql"),
        ("size", "clients/typescript/src/big.ts"),
        ("name", "pool.py in runtime, worker"),
        ("shim", "turnkeep.runtime.old"),
        ("upward", "turnkeep.runtime.old -> turnkeep.worker.w"),
    }
    # a package's own modules import through it without a circle; api -> runtime.sub.d
    # runs the package runtime.sub too
    edges = House(tmp_path).graph()
    assert edges["turnkeep.api.h"] == {
        "turnkeep.runtime",
        "turnkeep.runtime.sub",
        "turnkeep.runtime.sub.d",
    }
    assert "turnkeep.runtime.sub" not in edges["turnkeep.runtime.sub.d"]
