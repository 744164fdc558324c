"""The one ``MetaData`` every table of the schema is declared on, and the helpers the
table modules share. ``store/schema.py`` gathers the tables (its own and each plane's
module, e.g. ``store/schema_schedules.py``) and installs row-level security on them; a new
table goes in the module of its concern, imported there."""

from __future__ import annotations

from sqlalchemy import MetaData

metadata = MetaData(
    naming_convention={
        "pk": "pk_%(table_name)s",
        "fk": "fk_%(table_name)s_%(column_0_name)s",
        "ck": "ck_%(table_name)s_%(constraint_name)s",
        "ix": "ix_%(table_name)s_%(column_0_name)s",
        "uq": "uq_%(table_name)s_%(column_0_name)s",
    }
)


def in_list(column: str, values: object) -> str:
    """A CHECK or partial index's ``column IN (…)`` over persisted names, sorted."""
    names = sorted(str(v) for v in values)  # type: ignore[attr-defined]
    return f"{column} IN ({', '.join(repr(n) for n in names)})"
