"""HTTP routes call the service layer (api/service/), never the store: no module under
api/http/ touches a ``.store`` (``services.store``, ``self.store``, …). Read by ``ast``
from every module's tree (parsed apart: tests/parsing.py), as the import rules are."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.parsing import parse_apart

ROOT = Path(__file__).resolve().parents[2]
HTTP = ROOT / "api" / "http"


def touches(trees: dict[str, ast.Module]) -> set[tuple[str, int, str]]:
    """(module, line, expression) for every attribute ``store`` read or written."""
    found = set()
    for path, tree in trees.items():
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr == "store":
                found.add((path, node.lineno, ast.unparse(node)))
    return found


def test_no_http_module_touches_the_store() -> None:
    paths = {str(p.relative_to(ROOT)): str(p) for p in sorted(HTTP.rglob("*.py"))}
    assert "api/http/schedules.py" in paths, sorted(paths)
    found = touches(parse_apart(paths))
    assert found == set(), "api/http/ reaches the store; call api/service/: " + repr(found)


def test_the_reader_finds_a_route_that_reaches_the_store() -> None:
    code = (
        "async def route(request):\n"
        "    services = services_of(request)\n"
        "    return await services.run(services.store.reads.get_turn, 't', 's', 'u')\n"
        "def other(services):\n"
        "    store = services.store\n"
        "    return store.reads\n"  # a local named store is not a reach by itself
    )
    found = touches({"api/http/sneak.py": ast.parse(code)})
    assert {(line, expr) for _, line, expr in found} == {
        (3, "services.store"),
        (5, "services.store"),
    }
