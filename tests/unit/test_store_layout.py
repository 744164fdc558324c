"""The store's house: ``Store`` is a facade of named parts, one per concern module,
each with its statements beside it (store/sql/<concern>.sql), so "where does this
statement run" has one answer."""

from __future__ import annotations

from pathlib import Path

from turnkeep.store.sql import SQL_DIR, _parse

STORE = SQL_DIR.parent


def _code(concern: str) -> str:
    """The module beside ``sql/<concern>.sql``, and its registry when it has one (the
    erasure's statements are named by store/erasure_registry.py's ``Part``)."""
    registry = STORE / f"{concern}_registry.py"
    extra = registry.read_text() if registry.exists() else ""
    return (STORE / f"{concern}.py").read_text() + extra


def test_every_statement_is_run_by_the_module_beside_its_file():
    files = sorted(SQL_DIR.glob("*.sql"))
    assert files, SQL_DIR
    for sql in files:
        module = STORE / f"{sql.stem}.py"
        assert module.exists(), f"{sql.name} has no store/{module.name} beside it"
        code = _code(sql.stem)
        for name in _parse(sql.read_text()):
            assert f'"{name}"' in code, f"{name} ({sql.name}) is not run by store/{module.name}"


def test_the_store_has_no_mixin_bases():
    """``Store`` is composed, not inherited: its one base runs statements (ping, close)."""
    from turnkeep.store.facade import Store
    from turnkeep.store.statements import Statements

    assert Store.__bases__ == (Statements,)


def test_every_concern_is_a_named_part_of_the_store():
    """One part per concern module, named as its module, each an instance of that
    module's ``Statements`` class, all on the store's one connector."""
    from turnkeep.store.statements import Statements
    from turnkeep.store.testing import in_memory_store

    store = in_memory_store()
    parts = {name: part for name, part in vars(store).items() if isinstance(part, Statements)}
    concerns = {p.stem for p in SQL_DIR.glob("*.sql")}
    assert set(parts) == concerns
    for name, part in parts.items():
        assert type(part).__module__ == f"turnkeep.store.{name}", (name, type(part))
        assert part.connector is store.connector, name
    # a method lives on its part alone: none is left on the store itself
    for name, part in parts.items():
        own = {m for m in vars(type(part)) if not m.startswith("_")}
        assert not own & set(dir(store)) - set(parts), (name, own & set(dir(store)))


def test_no_store_module_is_over_500_lines():
    for path in [*STORE.glob("*.py"), *SQL_DIR.glob("*.sql")]:
        lines = len(Path(path).read_text().splitlines())
        assert lines <= 500, (path.name, lines)


def test_every_statement_made_from_a_template_is_run_by_the_module_beside_its_file():
    from turnkeep.store.sql import _instances, source

    made = _instances()
    assert made, "no statement made from a template"
    for name, template, _ in made:
        [sql] = [p for p in SQL_DIR.glob("*.sql") if f"-- template: {template}\n" in p.read_text()]
        code = _code(sql.stem)
        assert f'"{name}"' in code, f"{name} ({template}) is not run by store/{sql.stem}.py"
        assert name in source()
