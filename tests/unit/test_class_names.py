"""One word per concept (STYLE.md 26, docs/glossary.md): a public class name (no
leading underscore) is defined in one module of our packages, read with ``ast``.

A name defined in two modules fails unless it is listed in ``SHARED`` with the reason
it is truly one concept seen from two sides. A wire model is not restated for the
OpenAPI document: its closed view is derived (``closed`` in api/http/bodies.py), so a
``class Turn(models.Turn)`` beside ``turnkeep/models.py`` is a collision like any other.
The deprecated re-export modules (``House.shims`` in ``test_imports.py``) define
nothing and are left out, as are the migrations.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

from tests.parsing import parse_apart

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("api", "store", "worker", "runtime", "recovery", "turnkeep")

#: a public class name defined in more than one module: why it is one concept
SHARED: dict[str, str] = {
    "Delta": (
        "one live piece of a model's text: the value api/service/follow.py yields and the "
        "wire model turnkeep/models.py a client parses it into, the same three fields"
    ),
    "ResyncRequired": (
        "one refusal, resync_required (a cursor the journal no longer holds): raised by "
        "the store (store/errors.py), received by the client as an ApiError "
        "(turnkeep/client/errors.py)"
    ),
    "Message": (
        "one transcript message: the runtime's typed one (runtime/messages.py) and its "
        "wire form a client reads (turnkeep/models.py, GET .../messages)"
    ),
}


def _modules(root: Path) -> dict[str, str]:
    found: dict[str, str] = {}
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            relative = path.relative_to(root)
            if "migrations" in relative.parts:
                continue
            found[str(relative)] = str(path)
    return found


def definitions(root: Path) -> dict[str, list[str]]:
    """Every public module-level class name and the modules that define it."""
    where: dict[str, list[str]] = defaultdict(list)
    for path, tree in parse_apart(_modules(root)).items():
        for node in tree.body:
            if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                where[node.name].append(path)
    return dict(where)


def collisions(root: Path) -> dict[str, list[str]]:
    return {name: sorted(paths) for name, paths in definitions(root).items() if len(paths) > 1}


def test_no_public_class_name_is_defined_twice_without_a_reason() -> None:
    unlisted = {name: paths for name, paths in collisions(ROOT).items() if name not in SHARED}
    assert not unlisted, (
        "a public class name defined in two modules: rename one (docs/glossary.md), or "
        f"list it in SHARED with why it is one concept: {unlisted}"
    )


def test_every_listed_name_is_still_shared() -> None:
    stale = set(SHARED) - set(collisions(ROOT))
    assert not stale, f"no longer defined twice, drop from SHARED: {sorted(stale)}"


def test_the_reader_finds_a_collision_even_a_restatement(tmp_path: Path) -> None:
    files = {
        "runtime/a.py": "class Limits:\n    pass\nclass _Private:\n    pass\n",
        "store/b.py": "class Limits:\n    pass\nclass _Private:\n    pass\n",
        "turnkeep/models.py": "class Turn:\n    pass\n",
        "api/bodies.py": "from turnkeep import models\nclass Turn(models.Turn):\n    pass\n",
        "store/migrations/x.py": "class Limits:\n    pass\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    assert collisions(tmp_path) == {
        "Limits": ["runtime/a.py", "store/b.py"],
        "Turn": ["api/bodies.py", "turnkeep/models.py"],
    }
