"""One admission (store/admission.py): every way a turn comes in calls ``admit`` there,
and nothing else runs what writes a new turn. Read by ``ast`` from every module of our
packages (parsed apart: tests/parsing.py), as the import rules are:

- the store's admission methods (``Store.turns.admit``, ``Store.reruns.admit_rerun``),
  called or passed on, only inside store/admission.py's ``admit``;
- the input's lower recipe (``turnkeep.runtime.admission.admit``), only there too;
- each statement that inserts into ``turns`` (found in store/sql/), run only by the
  store module that owns it (``OWNERS``), and by its in-memory twin (store/testing/).

And docs/architecture.md's table of the admission paths names each ``Source`` once,
with the bounds ``RULES`` gives it.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterator
from dataclasses import fields
from dataclasses import replace as dataclasses_replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from tests.parsing import parse_apart
from turnkeep.api.auth import token_digest
from turnkeep.runtime.admission import TurnInput
from turnkeep.runtime.settings import Settings
from turnkeep.runtime.states import TurnState
from turnkeep.store import admission
from turnkeep.store.admission import RULES, Source
from turnkeep.store.errors import CreatorRevoked
from turnkeep.store.new_turn import UNBOUNDED, Bounds, NewTurn
from turnkeep.store.records import Admission, TurnRecord
from turnkeep.store.sql import source

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("api", "worker", "store", "recovery", "runtime", "turnkeep")
#: where the one admission lives: the only function that may call what admits
ONE = ("store/admission.py", "admit")
#: the store's methods that admit a turn, each on its part
METHODS = {"admit": "turns", "admit_rerun": "reruns"}
#: each statement that writes a row of ``turns``, and the one store module that runs it
OWNERS = {
    "admit_turn": "store/turns.py",
    "admit_rerun": "store/reruns.py",
    # a fork's copies of turns admitted in its source (no new turn: docs/architecture.md)
    "fork_turns": "store/forks.py",
}


def _trees() -> dict[str, ast.Module]:
    paths = {
        str(p.relative_to(ROOT)): str(p)
        for pkg in PACKAGES
        for p in sorted((ROOT / pkg).rglob("*.py"))
    }
    return parse_apart(paths)


def _functions(tree: ast.Module) -> Iterator[tuple[str, ast.AST]]:
    """Each node with the name of the top-level function (or class) it sits in."""
    for top in tree.body:
        name = getattr(top, "name", "")
        for node in ast.walk(top):
            yield name, node


def _is_store(node: ast.expr) -> bool:
    """``store``, ``x.store``, ``self.store``: the expression a store's part hangs on."""
    if isinstance(node, ast.Name):
        return node.id == "store"
    return isinstance(node, ast.Attribute) and node.attr == "store"


def _is_part(node: ast.expr, part: str) -> bool:
    """``store.turns``, ``self.store.reruns``: the part a store method hangs on."""
    return isinstance(node, ast.Attribute) and node.attr == part and _is_store(node.value)


def _recipe_aliases(tree: ast.Module) -> tuple[set[str], set[str]]:
    """The names ``turnkeep.runtime.admission`` is imported as, and those its ``admit`` is."""
    modules: set[str] = set()
    functions: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "turnkeep.runtime":
            modules |= {a.asname or a.name for a in node.names if a.name == "admission"}
        if isinstance(node, ast.ImportFrom) and node.module == "turnkeep.runtime.admission":
            functions |= {a.asname or a.name for a in node.names if a.name == "admit"}
        if isinstance(node, ast.Import):
            modules |= {
                a.asname or a.name for a in node.names if a.name == "turnkeep.runtime.admission"
            }
    return modules, functions


def admissions(trees: dict[str, ast.Module]) -> set[tuple[str, str, str]]:
    """(module, function, what) for every reference to something that admits."""
    found = set()
    for path, tree in trees.items():
        modules, functions = _recipe_aliases(tree)
        for where, node in _functions(tree):
            if (
                isinstance(node, ast.Attribute)
                and node.attr in METHODS
                and _is_part(node.value, METHODS[node.attr])
            ):
                found.add((path, where, f"Store.{METHODS[node.attr]}.{node.attr}"))
            if isinstance(node, ast.Attribute) and node.attr == "admit":
                value = node.value
                if isinstance(value, ast.Name) and value.id in modules:
                    found.add((path, where, "turnkeep.runtime.admission.admit"))
                if ast.unparse(value) == "turnkeep.runtime.admission":
                    found.add((path, where, "turnkeep.runtime.admission.admit"))
            if isinstance(node, ast.Name) and node.id in functions:
                found.add((path, where, "turnkeep.runtime.admission.admit"))
    return found


def statements(trees: dict[str, ast.Module]) -> set[tuple[str, str]]:
    """(module, statement) for every string naming a statement that writes ``turns``."""
    found = set()
    for path, tree in trees.items():
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                for arg in node.args:
                    if isinstance(arg, ast.Constant) and arg.value in OWNERS:
                        found.add((path, str(arg.value)))
    return found


def test_the_statements_that_write_turns_are_the_ones_named() -> None:
    writing = {name for name, sql in source().items() if re.search(r"INSERT INTO turns\b", sql)}
    assert writing == set(OWNERS)


def test_nothing_but_the_one_admission_admits() -> None:
    found = admissions(_trees())
    outside = {f for f in found if (f[0], f[1]) != ONE}
    assert outside == set(), "admitted outside store/admission.py's admit: " + repr(outside)
    # it is found where it is: the reader reads what it checks
    assert {f[2] for f in found} == {
        "Store.turns.admit",
        "Store.reruns.admit_rerun",
        "turnkeep.runtime.admission.admit",
    }


def test_each_statement_that_writes_turns_runs_in_its_module_only() -> None:
    runs = statements(_trees())
    for path, name in runs:
        assert path == OWNERS[name] or path.startswith("store/testing/"), (path, name)
    assert {(p, n) for p, n in runs if not p.startswith("store/testing/")} == {
        (path, name) for name, path in OWNERS.items()
    }


def test_the_reader_finds_a_bypass() -> None:
    """A surface that calls the store or the recipe itself is found."""
    code = (
        "from turnkeep.runtime import admission as recipe\n"
        "from turnkeep.runtime.admission import admit as lower\n"
        "def sneak(services, store):\n"
        "    services.store.turns.admit(tenant_id='t')\n"
        "    store.reruns.admit_rerun(tenant_id='t')\n"
        "    recipe.admit(store.turns.admit)\n"
        "    lower(None)\n"
        "    services.client.admit('s', 'demo', 'hi')  # a client's admit: not the store's\n"
        "class Sneaky:\n"
        "    def go(self):\n"
        "        self.store.turns.admit()\n"
        "        self.rows('admit_turn', {})\n"
    )
    tree = ast.parse(code)
    found = admissions({"api/sneak.py": tree})
    assert {(w, what) for _, w, what in found} == {
        ("sneak", "Store.turns.admit"),
        ("sneak", "Store.reruns.admit_rerun"),
        ("sneak", "turnkeep.runtime.admission.admit"),
        ("Sneaky", "Store.turns.admit"),
    }
    assert statements({"api/sneak.py": tree}) == {("api/sneak.py", "admit_turn")}


def test_the_architecture_docs_table_says_what_rules_says() -> None:
    text = (ROOT / "docs" / "architecture.md").read_text()
    section = text.split("## One admission", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and cells and cells[0].startswith("`"):
            rows[cells[0].strip("`")] = cells
    assert set(rows) >= {s.value for s in Source}
    for s in Source:
        rule = RULES[s]
        # the columns: source, where, roles, session quota, tenant quota, TTL, ...
        cells = rows[s.value]
        assert cells[3].startswith("yes") == rule.session_quota, (s, cells)
        assert cells[4].startswith("yes") == rule.tenant_quota, (s, cells)
        assert cells[5].startswith("yes"), (s, "every admission keeps the session's TTL")


class Recording:
    """The admission statements, recorded (what each was asked with is under test)."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []
        # the store's two admitting parts, both this recorder
        self.turns = self.reruns = self

    def _answer(self, name: str, params: dict[str, Any]) -> Admission:
        self.calls.append((name, params))
        at = datetime(2026, 1, 1, tzinfo=UTC)
        turn = TurnRecord(
            tenant_id=params["tenant_id"],
            session_id=params["session_id"],
            turn_id=params["turn_id"],
            ordinal=1,
            state=TurnState.QUEUED,
            agent_name=params["agent_name"],
            agent_hash=params["agent_hash"],
            input_hash=params["input_hash"],
            input=params["input"],
            output_schema=None,
            budget=None,
            attempt=0,
            revision=0,
            cancel_requested=False,
            pending_input=None,
            result=None,
            error=None,
            accepted_seq=1,
            submitted_by=params["submitted_by"],
            created_at=at,
            updated_at=at,
        )
        return Admission(turn=turn, created=True)

    def admit(self, new: NewTurn, bounds: Bounds = UNBOUNDED) -> Admission:
        return self._answer("admit", _asked(new, bounds))

    def admit_rerun(self, new: NewTurn, copies: Any, bounds: Bounds = UNBOUNDED) -> Admission:
        return self._answer("admit_rerun", _asked(new, bounds))


def _asked(new: NewTurn, bounds: Bounds) -> dict[str, Any]:
    return {f.name: getattr(x, f.name) for x in (new, bounds) for f in fields(x)}


def _ask(source: Source, **more: Any) -> admission.Ask:
    return admission.Ask(
        source=source,
        tenant_id="acme",
        session_id="s",
        turn_id="t",
        by="ci",
        agent_name="demo",
        agent_hash="a" * 64,
        turn_input=TurnInput([{"role": "user", "content": "hi"}]),
        output_schema=None,
        budget=None,
        **more,
    )


SETTINGS = Settings(
    erasure={"session_ttl": 600.0, "session_ttls": {"acme": 60.0}},
    bounds={"max_queued_per_session": 3, "max_queued_per_tenant": 30},
)


@pytest.mark.parametrize("source", list(Source))
def test_every_source_gets_the_tenants_ttl_and_its_quotas(source: Source) -> None:
    store = Recording()
    copies = [{"type": "tool.completed"}] if source is Source.RERUN else None
    sent: list[tuple[Any, ...]] = []
    admitted = admission.admit(store, SETTINGS, _ask(source, copies=copies, priority=7))
    admission.release(lambda *a, **k: sent.append((*a, k)), admitted)
    [(name, params)] = store.calls
    assert name == ("admit_rerun" if source is Source.RERUN else "admit")
    assert params["default_ttl"] == 60.0  # the tenant's, never none
    rule = RULES[source]
    assert params["max_queued_session"] == (3 if rule.session_quota else None)
    assert params["max_queued_tenant"] == (30 if rule.tenant_quota else None)
    assert sent == [("acme", "s", {"priority": 7})]


def test_a_tick_is_refused_for_a_creator_no_token_stands_for_or_a_reader() -> None:
    tokens = json.dumps(
        [
            {"sha256": token_digest("x"), "tenant": "acme", "subject": "ci"},
            {"sha256": token_digest("y"), "tenant": "acme", "subject": "ro", "role": "reader"},
        ]
    )
    settings = Settings(auth={"tokens": tokens})
    store = Recording()
    admission.admit(store, settings, _ask(Source.SCHEDULE))  # ci may write
    for who in ("ro", "gone"):
        with pytest.raises(CreatorRevoked):
            admission.admit(store, settings, dataclasses_replace(_ask(Source.SCHEDULE), by=who))
    # a follow-up's creator may have no token (a bridge's binding): not looked up
    admission.admit(store, settings, dataclasses_replace(_ask(Source.FOLLOWUP), by="gone"))
    assert [p["submitted_by"] for _, p in store.calls] == ["ci", "gone"]
