"""Datasets in the store (the statements of sql/datasets.sql): immutable versions of a
named dataset and their cases (docs/evaluation.md). A version is created with its
cases in one transaction, numbered after the newest; the same cases again answer the
version that holds them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from turnkeep.store.db import Row
from turnkeep.store.errors import NotFound, StoreError
from turnkeep.store.rows import first, jsonb
from turnkeep.store.statements import Statements

#: how often a creation is tried again when a concurrent one took its number
CREATE_TRIES = 5


@dataclass(frozen=True)
class DatasetRecord:
    tenant_id: str
    name: str
    version: int
    cases_hash: str
    case_count: int
    created_by: str
    created_at: datetime


@dataclass(frozen=True)
class CaseRecord:
    case_id: str
    ordinal: int
    input: dict[str, Any]
    assertions: list[dict[str, Any]]
    source: dict[str, Any] | None


@dataclass(frozen=True)
class DatasetListing:
    name: str
    latest_version: int
    versions: int
    updated_at: datetime


def dataset_record(row: Row) -> DatasetRecord:
    return DatasetRecord(**{k: row[k] for k in DatasetRecord.__dataclass_fields__})


def case_record(row: Row) -> CaseRecord:
    return CaseRecord(**{k: row[k] for k in CaseRecord.__dataclass_fields__})


class DatasetBusy(StoreError):
    """Raised when a dataset version could not be numbered: concurrent creations of
    the same dataset kept taking the next number (try again)."""

    code = "dataset_busy"
    status = 409
    title = "Dataset is being written"
    public = "another version of the dataset was being created: try again"


class Datasets(Statements):
    """``/v1/datasets`` (api/service/datasets.py)."""

    def create_dataset_version(
        self,
        tenant_id: str,
        name: str,
        *,
        cases: Sequence[Mapping[str, Any]],
        cases_hash: str,
        created_by: str,
    ) -> tuple[DatasetRecord, bool]:
        """The new version holding ``cases`` (each ``{case_id, ordinal, input,
        assertions, source}``), or the version that already holds them: (it, whether
        this call created it)."""
        params = {
            "tenant_id": tenant_id,
            "name": name,
            "cases_hash": cases_hash,
            "case_count": len(cases),
            "created_by": created_by,
        }
        for _ in range(CREATE_TRIES):
            with self.connector.transaction(tenant_id) as tx:
                row = first(tx.rows("create_dataset_version", params))
                if row is not None:
                    tx.rows(
                        "insert_cases",
                        {
                            "tenant_id": tenant_id,
                            "name": name,
                            "version": row["version"],
                            "cases": jsonb([dict(c) for c in cases]),
                        },
                    )
                    return dataset_record(row), True
            found = self._one("dataset_by_hash", params)
            if found is not None:
                return dataset_record(found), False
        raise DatasetBusy(f"dataset {name!r}: no version number after {CREATE_TRIES} tries")

    def get_dataset_version(
        self, tenant_id: str, name: str, version: int | None = None
    ) -> DatasetRecord:
        """One version (None: the newest). ``NotFound``: no such dataset or version."""
        row = self._one(
            "get_dataset_version", {"tenant_id": tenant_id, "name": name, "version": version}
        )
        if row is None:
            raise NotFound("dataset not found")
        return dataset_record(row)

    def dataset_versions(self, tenant_id: str, name: str, limit: int = 1000) -> list[DatasetRecord]:
        rows = self._rows(
            "dataset_versions", {"tenant_id": tenant_id, "name": name, "limit": limit}
        )
        return [dataset_record(r) for r in rows]

    def list_datasets(self, tenant_id: str, limit: int = 1000) -> list[DatasetListing]:
        rows = self._rows("list_datasets", {"tenant_id": tenant_id, "limit": limit})
        return [
            DatasetListing(
                name=r["name"],
                latest_version=int(r["latest_version"]),
                versions=int(r["versions"]),
                updated_at=r["updated_at"],
            )
            for r in rows
        ]

    def dataset_cases(self, tenant_id: str, name: str, version: int) -> list[CaseRecord]:
        rows = self._rows(
            "dataset_cases", {"tenant_id": tenant_id, "name": name, "version": version}
        )
        return [case_record(r) for r in rows]
