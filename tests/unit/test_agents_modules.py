"""Every agents module of the repository is written as a user's is, against the public
face (issue 38, docs/agents.md): it imports ``turnkeep`` (``from turnkeep import …``)
and nothing of the server's insides (``turnkeep.runtime``, ``.store``, ``.worker``,
``.api``, ``.recovery``), and neither do the modules of ours it is built from nor the
docs' Python examples. Read with ``ast``, nothing imported; docs/agents.md's examples
also run, in a fresh interpreter."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: every agents module (what ``TURNKEEP_AGENTS`` names or ``load_agents`` loads); one may
#: import another's ``AGENTS`` (tests/agents.py serves the demo's agents too)
AGENTS_MODULES = (
    "turnkeep.runtime.demo",
    "tests.agents",
    "tests.eval_agents",
    "tests.chaos.chaos_agents",
    "tests.deploys.build_a",
    "tests.deploys.build_b",
    "tests.deploys.build_c",
    "tests.integration.api_agents",
    "tests.moderation",
    "bench.agents",
)
#: the server's folders (``turnkeep.<folder>``, or by their own names in a checkout)
INSIDES = ("runtime", "store", "worker", "api", "recovery")
#: where the repository names an agents module, in code, configuration or docs
NAMED = (
    re.compile(r"TURNKEEP_AGENTS\W{1,4}([A-Za-z_]\w*(?:\.\w+)+)"),
    re.compile(r"load_agents\(\s*[\"']([\w.]+)[\"']"),
    re.compile(r"\bagents=[\"']([\w.]+)[\"']"),
    re.compile(r"\bAGENT\w*\s*=\s*\(?[\"']([\w.]+)[\"']"),
)
SCANNED = (".py", ".md", ".yaml", ".yml", ".sh", ".toml", ".service")
#: the docs whose Python examples must use the face only
DOCS = [*sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md"]
PYTHON_BLOCK = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)
#: an import statement at the start of a line, parenthesised names included
IMPORT_LINE = re.compile(r"^[ \t]*(?:from|import)[ \t][^\n(]*(?:\([^)]*\))?[^\n]*", re.MULTILINE)


def _path(module: str) -> Path | None:
    """The file of one of our modules, else None (a library, or a module a doc
    makes up)."""
    parts = module.split(".")
    if parts[0] == "turnkeep" and len(parts) > 1 and parts[1] in INSIDES:
        parts = parts[1:]  # turnkeep/<folder> is a link to <folder>
    base = ROOT.joinpath(*parts)
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


def _imports(tree: ast.AST) -> Iterator[tuple[str, int]]:
    """Each module an import names, with its line; ``from turnkeep import runtime``
    names ``turnkeep.runtime``."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from ((alias.name, node.lineno) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.module, node.lineno
            if node.module == "turnkeep":
                yield from ((f"turnkeep.{a.name}", node.lineno) for a in node.names)


def _inside(module: str) -> bool:
    parts = module.split(".")
    if parts[0] == "turnkeep":
        return len(parts) > 1 and parts[1] in INSIDES
    return parts[0] in INSIDES


def _wrong_imports(tree: ast.AST, where: str) -> list[str]:
    return [
        f"{where}:{line}: {name}"
        for name, line in _imports(tree)
        if _inside(name) and name not in AGENTS_MODULES
    ]


def _built_from() -> dict[str, Path]:
    """The agents modules and the modules of tests/ and bench/ they import, at any
    depth (tests/deploys/build_a.py's agents are tests/deploys/__init__.py's)."""
    found: dict[str, Path] = {}
    todo = list(AGENTS_MODULES)
    while todo:
        module = todo.pop()
        path = _path(module)
        if module in found or path is None:
            continue
        found[module] = path
        for name, _ in _imports(ast.parse(path.read_text(), str(path))):
            if name.partition(".")[0] in ("tests", "bench"):
                todo.append(name)
    return found


def _named() -> set[str]:
    """Modules of ours the repository names as agents modules."""
    names: set[str] = set()
    for folder, dirs, files in os.walk(ROOT):
        dirs[:] = [
            d
            for d in dirs
            if not d.startswith(".") and d not in ("node_modules", "__pycache__")
            if not d.endswith(".egg-info")
        ]
        for file in files:
            if file.endswith(SCANNED) or file == "Makefile":
                text = Path(folder, file).read_text(errors="replace")
                names.update(m for p in NAMED for m in p.findall(text))
    return {n for n in names if _path(n) is not None}


def test_the_list_holds_every_agents_module() -> None:
    assert all(_path(m) for m in AGENTS_MODULES), [m for m in AGENTS_MODULES if not _path(m)]
    named = _named()
    assert "tests.agents" in named and "turnkeep.runtime.demo" in named  # the reader reads
    assert named <= set(AGENTS_MODULES), sorted(named - set(AGENTS_MODULES))


def test_agents_modules_import_the_public_face_only() -> None:
    modules = _built_from()
    assert "tests.deploys" in modules  # build_a's agents are declared there
    wrong = [
        w
        for module, path in sorted(modules.items())
        for w in _wrong_imports(ast.parse(path.read_text(), str(path)), module)
    ]
    assert not wrong, "imports of the server's insides:\n" + "\n".join(wrong)


def _example(block: str, where: str) -> ast.Module:
    """An example's code; of one elided for the reader (``Agent(name=…, ...)``), its
    import statements."""
    try:
        return ast.parse(block, where)
    except SyntaxError:
        imports = [textwrap.dedent(m) for m in IMPORT_LINE.findall(block)]
        return ast.parse("\n".join(imports), where)


def test_the_docs_examples_import_the_public_face_only() -> None:
    wrong = []
    for doc in DOCS:
        for n, block in enumerate(PYTHON_BLOCK.findall(doc.read_text())):
            where = f"{doc.relative_to(ROOT)} (example {n + 1})"
            wrong += _wrong_imports(_example(block, where), where)
    assert not wrong, "imports of the server's insides:\n" + "\n".join(wrong)


def test_the_reader_finds_a_wrong_import() -> None:
    elided = "from turnkeep import (\n    Agent,\n    tool,\n)\n"
    elided += "from turnkeep.api import x\nAgent(name='a', ...)\n"
    assert _wrong_imports(_example(elided, "doc"), "doc") == ["doc:5: turnkeep.api"]
    tree = ast.parse(
        "from turnkeep import Agent, runtime\nimport turnkeep.store.x\nfrom worker import w\n"
        "from turnkeep.runtime.messages import Role\nfrom turnkeep.runtime.demo import AGENTS\n"
    )
    assert _wrong_imports(tree, "m") == [
        "m:1: turnkeep.runtime",
        "m:2: turnkeep.store.x",
        "m:3: worker",
        "m:4: turnkeep.runtime.messages",
    ]


def test_the_agents_doc_examples_run() -> None:
    """docs/agents.md's modules, each loaded under the name its docstring gives, its
    test run, its provider called and priced."""
    blocks = PYTHON_BLOCK.findall((ROOT / "docs" / "agents.md").read_text())
    named = {(ast.get_docstring(ast.parse(b)) or "").partition(":")[0]: b for b in blocks}
    assert list(named) == [
        "support/agents.py",
        "tests/support_agents.py",
        "tests/test_support_script.py",
        "support/echo.py",
    ]
    code = textwrap.dedent(
        f"""
        import sys, types
        from turnkeep import Agent, ModelRequest, Message, Role
        from turnkeep.runtime.pricing import cost
        from turnkeep.runtime.providers.registry import make_provider

        sys.modules["support"] = types.ModuleType("support")

        def load(path, source):
            name = path.removesuffix(".py").replace("/", ".")
            module = sys.modules[name] = types.ModuleType(name)
            exec(compile(source, path, "exec"), module.__dict__)
            return module

        blocks = {named!r}
        agents = load("support/agents.py", blocks["support/agents.py"])
        scripted = load("tests/support_agents.py", blocks["tests/support_agents.py"])
        assert [type(a) for a in agents.AGENTS + scripted.AGENTS] == [Agent, Agent]
        tests = load("tests/test_support_script.py", blocks["tests/test_support_script.py"])
        tests.test_the_script_asks_then_answers()
        load("support/echo.py", blocks["support/echo.py"])
        echo = make_provider("echo", {{}})
        asked = ModelRequest("plain", "", (Message(Role.USER, "hello"),))
        answer = echo.complete(asked, on_delta=print)
        assert (answer.text, answer.model) == ("hello", "echo/plain"), answer
        assert cost(answer.model, answer.usage) == 0.0
        print("ran")
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["hello", "ran"]
