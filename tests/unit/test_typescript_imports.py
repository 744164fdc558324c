"""The TypeScript client's sources (clients/typescript/src) import one another without a
circle, type-only imports and ``export … from`` included: read from the text, no node
needed."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "clients" / "typescript" / "src"

#: ``import … from "x"``, ``import type {…} from "x"``, ``export * from "x"``,
#: ``export {…} from "x"`` (over several lines too) and ``import "x"``
IMPORT = re.compile(
    r"""^[ \t]*(?:import|export)\s+(?:type\s+)?(?:[\w$]+\s*,?\s*)?"""
    r"""(?:\*(?:\s+as\s+[\w$]+)?\s*)?(?:\{[^}]*\}\s*)?from\s*["']([^"']+)["']"""
    r"""|^[ \t]*import\s*["']([^"']+)["']""",
    re.MULTILINE,
)


def imports(src: Path) -> dict[str, set[str]]:
    """Each source file's name and the names of the sources it imports."""
    files = {p.name: p for p in [*src.glob("*.ts"), *src.glob("*.tsx")]}
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        graph[name] = set()
        for match in IMPORT.finditer(path.read_text()):
            spec = match.group(1) or match.group(2)
            if not spec.startswith("./"):
                continue  # a library's, or outside src/
            stem = spec[2:].removesuffix(".js")
            found = [f"{stem}.ts", f"{stem}.tsx"]
            target = next((f for f in found if f in files), None)
            assert target is not None, f"{name} imports {spec}, which is not in {src}"
            graph[name].add(target)
    return graph


def circle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import circle of the graph, as the files around it, or None."""
    done: set[str] = set()
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        if node in path:
            return [*path[path.index(node) :], node]
        if node in done:
            return None
        path.append(node)
        for nxt in sorted(graph[node]):
            if found := visit(nxt):
                return found
        path.pop()
        done.add(node)
        return None

    for node in sorted(graph):
        if found := visit(node):
            return found
    return None


def test_the_client_sources_import_without_a_circle() -> None:
    graph = imports(SRC)
    # the reader finds the imports we know of (a type-only one, a re-export)
    assert "connection.ts" in graph["client.ts"] and "follow.ts" in graph["sessions.ts"]
    assert "types.ts" in graph["follow.ts"]
    assert "schema.ts" in graph["index.ts"]
    found = circle(graph)
    assert found is None, "import circle: " + " -> ".join(found or [])


def test_a_circle_is_found(tmp_path: Path) -> None:
    (tmp_path / "a.ts").write_text('import { b } from "./b.js";\nimport x from "react";\n')
    (tmp_path / "b.ts").write_text('// b\nimport type {\n  C,\n} from "./c.js";\n')
    (tmp_path / "c.ts").write_text('export * from "./a.js";\n')
    (tmp_path / "d.ts").write_text('import "./a.js";\n')
    graph = imports(tmp_path)
    assert graph == {"a.ts": {"b.ts"}, "b.ts": {"c.ts"}, "c.ts": {"a.ts"}, "d.ts": {"a.ts"}}
    assert circle(graph) == ["a.ts", "b.ts", "c.ts", "a.ts"]
    (tmp_path / "c.ts").write_text("export const c = 1;\n")
    assert circle(imports(tmp_path)) is None
