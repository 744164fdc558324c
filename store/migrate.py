"""Run the Alembic migrations from code (tests, the CLI, ``make run``)."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config

from turnkeep.runtime.settings import get_settings

MIGRATIONS = Path(__file__).resolve().parent / "migrations"


def alembic_config(url: str) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    cfg.attributes["url"] = url
    return cfg


def upgrade(url: str, revision: str = "head") -> None:
    command.upgrade(alembic_config(url), revision)


def main() -> None:
    """``python -m turnkeep.store.migrate``: upgrade TURNKEEP_MIGRATE_URL (the tables' owner;
    see ``DatabaseSettings.migrate_url``) to head."""
    upgrade(get_settings().database.effective_migrate_url)


if __name__ == "__main__":
    main()
